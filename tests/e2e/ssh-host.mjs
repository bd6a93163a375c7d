// The ssh test host of the window's host tests: a real sshd in a network
// namespace of its own under a Unix user of its own (overseer-test-host),
// with the real demo agent, a profile for it and a git repository put there
// over ssh, as a user would.
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";

/** Starts a test host (needs root); `bin`: where the built binaries are.
 * Returns `{ child, info }`: info is `{ user, addr, url, home, ssh_config,
 * send(line), ssh(command) }`; `send("cut")` / `send("restore")` cut and
 * restore its link. It is removed when `stop()` closes its stdin. */
export async function startHost(bin) {
  const child = spawn(join(bin, "overseer-test-host"), [], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done) throw new Error("overseer-test-host exited before saying where its host is (it needs root)");
  const info = JSON.parse(first.value);
  info.send = async (command) => {
    child.stdin.write(`${command}\n`);
    const answer = await lines.next();
    assert.equal(answer.value, "ok", `the host did ${command}`);
  };
  info.ssh = (command) =>
    execFileSync("ssh", ["-F", info.ssh_config, `${info.user}@${info.addr}`, "--", command], { encoding: "utf8" }).trim();
  info.stop = async () => {
    child.stdin.end();
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", resolve)));
  };
  return { child, info };
}

/** Puts the demo agent, a profile `demo` for it (no network: it needs
 * none) and a git repository `repo` on the host. */
export function provision(host, bin) {
  host.ssh("mkdir -p demo && mkdir -p -m 700 .config .config/overseer");
  execFileSync("scp", ["-F", host.ssh_config, "-q", join(bin, "overseer-demo-agent"), `${host.user}@${host.addr}:demo/overseer-demo-agent`]);
  host.ssh(`printf '[agents.demo]\\ncommand = "${host.home}/demo/overseer-demo-agent"\\nmode = "default"\\nnetwork = "none"\\n' > .config/overseer/overseer.toml`);
  host.ssh("git init -q -b main repo && printf 'hello\\n' > repo/greeting.txt && git -C repo add -A && git -C repo -c user.name=T -c user.email=t@t commit -q -m init");
}
