// The official MCP TypeScript SDK client (pinned in package.json) driving
// `overseer mcp` over stdio, for crates/overseer-cli/tests/cli/mcp.rs.
//
//   node mcp-client.mjs '<json>'
//
// where <json> is {"command", "args", "cwd"?, "env"?, "clientName"?, "calls": [
//   {"tool", "arguments", "progress"?: bool, "cancelAfterMs"?: n, "timeoutMs"?: n,
//    "waitForGo"?: bool}
// ]}. A call with waitForGo waits for one line on stdin first: a JSON object
// merged into its arguments (`{}` for none). It connects (initialize), lists the tools (which also arms the SDK's
// output-schema check of every later result), then makes the calls one after
// another. Each event is one JSON line on stdout:
//   {"event": "initialized", "protocolVersion", "server", "instructions"}
//   {"event": "tools", "tools": [...]}
//   {"event": "calling", "tool"}
//   {"event": "progress", "tool", "progress"}
//   {"event": "result", "tool", "result", "ms"}      (the CallToolResult)
//   {"event": "error", "tool", "message", "ms"}      (a thrown error: timeout, abort, schema)
//   {"event": "done"}

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createInterface } from "node:readline";

const stdinLines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const go = async () => {
  const { value, done } = await stdinLines.next();
  return done ? {} : JSON.parse(value);
};

const spec = JSON.parse(process.argv[2] ?? "{}");
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const transport = new StdioClientTransport({
  command: spec.command,
  args: spec.args ?? [],
  cwd: spec.cwd,
  env: spec.env,
  stderr: "inherit",
});
// The client tells an HTTP transport the negotiated revision; catch it here.
let protocolVersion = null;
transport.setProtocolVersion = (v) => {
  protocolVersion = v;
};

const client = new Client({ name: spec.clientName ?? "overseer-test-client", version: "1.0.0" });
await client.connect(transport);
out({
  event: "initialized",
  protocolVersion,
  server: client.getServerVersion(),
  instructions: client.getInstructions(),
});

const { tools } = await client.listTools();
out({ event: "tools", tools });

for (const call of spec.calls ?? []) {
  const args = { ...(call.arguments ?? {}), ...(call.waitForGo ? await go() : {}) };
  const controller = new AbortController();
  const options = { signal: controller.signal, timeout: call.timeoutMs ?? 120000 };
  if (call.progress) {
    options.onprogress = (progress) => out({ event: "progress", tool: call.tool, progress });
    options.resetTimeoutOnProgress = true;
  }
  let timer = null;
  if (call.cancelAfterMs !== undefined) {
    timer = setTimeout(() => controller.abort("the test cancels this call"), call.cancelAfterMs);
  }
  const started = Date.now();
  out({ event: "calling", tool: call.tool });
  try {
    const result = await client.callTool({ name: call.tool, arguments: args }, undefined, options);
    out({ event: "result", tool: call.tool, result, ms: Date.now() - started });
  } catch (e) {
    out({ event: "error", tool: call.tool, message: String(e?.message ?? e), ms: Date.now() - started });
  } finally {
    if (timer) clearTimeout(timer);
  }
}

if (spec.holdMs) {
  await new Promise((r) => setTimeout(r, spec.holdMs));
}
await client.close();
out({ event: "done" });
process.exit(0);
