// Settings -> Hosts, "Add a host": the form's own checks before anything is
// sent (the app checks again and its typed refusal is shown as it comes).
// The rules are `overseer hosts add`'s: a name of letters, digits, `-`, `_`
// and `.` (not starting with `-`, at most 64), and an address
// `ssh://[user@]host[:port]` with no part that ssh could read as an option.
import type { FieldError } from "../types";

/** `ssh://[user@]host[:port]` read into its parts (an IPv6 address in
 * brackets), or why it is not one. */
export type ParsedUrl = { ok: true; user: string | null; address: string; port: number | null } | { ok: false; message: string };

const PART = /^[A-Za-z0-9._-]+$/;
const ADDRESS = /^[A-Za-z0-9._:-]+$/;

/** Reads a host address as `overseer hosts add` does. */
export function parseHostUrl(url: string): ParsedUrl {
  const bad = (why: string): ParsedUrl => ({ ok: false, message: `${why}: write ssh://user@host or ssh://user@host:port` });
  if (url === "") return bad("the address is empty");
  if (!url.startsWith("ssh://")) return bad(`“${url}” does not start with ssh://`);
  let rest = url.slice("ssh://".length);
  if (rest.endsWith("/")) rest = rest.slice(0, -1);
  const at = rest.lastIndexOf("@");
  const user = at < 0 ? null : rest.slice(0, at);
  const hostport = at < 0 ? rest : rest.slice(at + 1);
  let address: string;
  let port: string | null = null;
  if (hostport.startsWith("[")) {
    const close = hostport.indexOf("]");
    if (close < 0) return bad(`“${url}” opens an IPv6 address with [ but never closes it`);
    address = hostport.slice(1, close);
    const after = hostport.slice(close + 1);
    if (after.startsWith(":")) port = after.slice(1);
    else if (after !== "") return bad(`“${url}” has “${after}” after the address`);
  } else {
    const colon = hostport.indexOf(":");
    address = colon < 0 ? hostport : hostport.slice(0, colon);
    port = colon < 0 ? null : hostport.slice(colon + 1);
  }
  if (user !== null) {
    if (user === "") return bad(`“${url}” has an empty user before @`);
    if (user.startsWith("-") || !PART.test(user)) return bad(`the user “${user}” may only have letters, digits, “.”, “_” and “-” (not first)`);
  }
  if (address === "") return bad(`“${url}” names no host`);
  if (address.startsWith("-") || !ADDRESS.test(address)) return bad(`the host “${address}” may only have letters, digits, “.”, “_”, “:” and “-” (not first)`);
  let portNumber: number | null = null;
  if (port !== null) {
    portNumber = /^[0-9]{1,5}$/.test(port) ? Number(port) : NaN;
    if (!(portNumber >= 1 && portNumber <= 65535)) return { ok: false, message: `“${port}” is not a port: give a number from 1 to 65535, or leave “:port” out for 22` };
  }
  return { ok: true, user, address, port: portNumber };
}

/** Why `name` cannot name a host, or null. */
export function hostNameProblem(name: string, known: readonly string[]): string | null {
  if (name === "") return "Give the host a name, such as build1: it names the host in the fleet and with --host.";
  if (name.length > 64) return `The name is ${name.length} characters long: at most 64.`;
  if (name.startsWith("-")) return "The name may not start with “-”.";
  if (!/^[A-Za-z0-9._-]+$/.test(name)) return `“${name}” may only have letters, digits, “.”, “_” and “-”.`;
  if (known.includes(name)) return `${name} is already a host: upgrade or remove it below, or pick another name.`;
  return null;
}

/** Everything wrong with the form, each under its field (`name`, `url`);
 * empty: it can be sent. */
export function hostFormProblems(name: string, url: string, known: readonly string[]): FieldError[] {
  const problems: FieldError[] = [];
  const n = hostNameProblem(name.trim(), known);
  if (n) problems.push({ field: "name", message: n });
  const u = parseHostUrl(url.trim());
  if (!u.ok) problems.push({ field: "url", message: u.message.charAt(0).toUpperCase() + u.message.slice(1) + "." });
  return problems;
}

/** `s` as one sh word (quoted only when it needs to be). */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Why `path` cannot be a workspace's path, or null: the repository's
 * absolute path on the machine it lives on. */
export function workspacePathProblem(path: string, host: string | null): string | null {
  const where = host === null ? "this machine" : host;
  if (path === "") return `Give the repository's path on ${where}, such as /home/me/src/app.`;
  if (!path.startsWith("/")) return `“${path}” is not an absolute path: give the repository's whole path on ${where}, starting with /.`;
  return null;
}

/** The command that adds workspace `path` (named `name`, or after its
 * folder when empty) on host `host` (null: this machine). */
export function workspaceAddCommand(host: string | null, path: string, name: string): string {
  const words = ["overseer"];
  if (host !== null) words.push("--host", shellWord(host));
  words.push("workspace", "add", shellWord(path));
  if (name !== "") words.push("--name", shellWord(name));
  return words.join(" ");
}
