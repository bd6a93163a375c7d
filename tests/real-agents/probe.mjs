#!/usr/bin/env node
// A tiny raw ACP client (JSON-RPC 2.0, newline-delimited JSON over stdio) with
// no dependencies, to drive a real adapter by hand and see every message.
//
// usage: node probe.mjs [options] -- COMMAND [ARGS...]
//   --cwd DIR            session cwd (absolute; default: process cwd)
//   --env K=V            extra env for the adapter (repeatable); the adapter
//                        gets ONLY PATH plus these unless --inherit-env
//   --inherit-env        start from this process's whole environment
//   --prompt TEXT        prompt text (repeatable: one session/prompt each, in order)
//   --mode ID            session/set_mode to ID right after session/new
//   --config ID=VALUE    session/set_config_option right after session/new (repeatable)
//   --permission KIND    answer request_permission with the first option of this kind
//                        (allow_once | allow_always | reject_once | reject_always),
//                        or "cancelled" to answer {outcome: cancelled}; default reject_once
//   --permission-seq K1,K2,...  one kind per request, in order (then --permission)
//   --elicit JSON        content to answer elicitation/create with (action accept);
//                        "decline" or "cancel" to answer that action instead
//   --resume SESSIONID   session/resume instead of session/new
//   --load SESSIONID     session/load instead of session/new
//   --cancel-after MS    send session/cancel MS after each prompt starts
//   --kill-after MS      SIGKILL the adapter's process group MS after the LAST
//                        prompt starts (a crash, for session/resume checks)
//   --timeout MS         give up after MS (default 120000)
//   --quiet-updates      do not print session/update notifications in full
//   --no-elicitation     do not declare clientCapabilities.elicitation
// Prints every message with a direction arrow and a time since spawn:
//   "+1234ms -> {...}" (client to agent), "<- {...}" (agent to client);
// the adapter's stderr goes to probe's stderr prefixed "[stderr]".
// Exit code 0 when every prompt answered, 1 otherwise.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const o = { cwd: process.cwd(), env: {}, prompts: [], config: [], permission: "reject_once", permSeq: [],
  elicit: null, timeout: 120000, quiet: false, inheritEnv: false, elicitation: true };
let cmd = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  const a = argv[i], v = argv[i + 1];
  if (a === "--") { cmd = argv.slice(i + 1); break; }
  else if (a === "--cwd") { o.cwd = path.resolve(v); i++; }
  else if (a === "--env") { const k = v.indexOf("="); o.env[v.slice(0, k)] = v.slice(k + 1); i++; }
  else if (a === "--inherit-env") o.inheritEnv = true;
  else if (a === "--prompt") { o.prompts.push(v); i++; }
  else if (a === "--mode") { o.mode = v; i++; }
  else if (a === "--config") { const k = v.indexOf("="); o.config.push([v.slice(0, k), v.slice(k + 1)]); i++; }
  else if (a === "--permission") { o.permission = v; i++; }
  else if (a === "--permission-seq") { o.permSeq = v.split(","); i++; }
  else if (a === "--elicit") { o.elicit = v; i++; }
  else if (a === "--resume") { o.resume = v; i++; }
  else if (a === "--load") { o.load = v; i++; }
  else if (a === "--cancel-after") { o.cancelAfter = Number(v); i++; }
  else if (a === "--kill-after") { o.killAfter = Number(v); i++; }
  else if (a === "--timeout") { o.timeout = Number(v); i++; }
  else if (a === "--quiet-updates") o.quiet = true;
  else if (a === "--no-elicitation") o.elicitation = false;
  else { console.error(`probe: unknown argument ${a}`); process.exit(2); }
}
if (!cmd || !cmd.length) { console.error("usage: node probe.mjs [options] -- COMMAND [ARGS...]"); process.exit(2); }

const t0 = Date.now();
const stamp = () => `+${String(Date.now() - t0).padStart(6)}ms`;
const out = (s) => process.stdout.write(s + "\n");

const env = o.inheritEnv ? { ...process.env, ...o.env } : { PATH: process.env.PATH, ...o.env };
// A relative command path ("node_modules/.bin/x") is relative to where probe
// runs, not to the session cwd the adapter is started in.
const exe = cmd[0].includes("/") ? path.resolve(cmd[0]) : cmd[0];
const child = spawn(exe, cmd.slice(1), { cwd: o.cwd, env, stdio: ["pipe", "pipe", "pipe"], detached: true });
child.on("error", (e) => { out(`${stamp()} !! cannot start ${cmd[0]}: ${e.message}`); process.exit(1); });
child.stderr.on("data", (d) => { for (const l of String(d).split("\n")) if (l) process.stderr.write(`[stderr] ${l}\n`); });
child.on("exit", (code, sig) => { out(`${stamp()} == adapter exited code=${code} signal=${sig}`); finish(1); });

let nextId = 1;
const pending = new Map();
function send(msg) {
  out(`${stamp()} -> ${JSON.stringify(msg)}`);
  child.stdin.write(JSON.stringify(msg) + "\n");
}
function request(method, params) {
  const id = nextId++;
  send({ jsonrpc: "2.0", id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}
const notify = (method, params) => send({ jsonrpc: "2.0", method, params });
const respond = (id, result) => send({ jsonrpc: "2.0", id, result });
const respondError = (id, code, message) => send({ jsonrpc: "2.0", id, error: { code, message } });

// Keep fs access inside cwd.
function inside(p) {
  const r = path.resolve(o.cwd, p);
  const root = path.resolve(o.cwd);
  return r === root || r.startsWith(root + path.sep) ? r : null;
}

let permCount = 0;
function handleRequest(msg) {
  const { id, method, params } = msg;
  if (method === "session/request_permission") {
    const kind = o.permSeq[permCount++] ?? o.permission;
    if (kind === "cancelled") return respond(id, { outcome: { outcome: "cancelled" } });
    const opt = params.options.find((x) => x.kind === kind) || params.options.find((x) => x.optionId === kind);
    if (!opt) { out(`${stamp()} !! no option of kind ${kind}; answering cancelled`); return respond(id, { outcome: { outcome: "cancelled" } }); }
    return respond(id, { outcome: { outcome: "selected", optionId: opt.optionId } });
  }
  if (method === "elicitation/create") {
    if (o.elicit === "decline" || o.elicit === "cancel") return respond(id, { action: o.elicit });
    let content = o.elicit ? JSON.parse(o.elicit) : null;
    if (!content) {
      // Default: the first option (or "yes") of every field.
      content = {};
      for (const [k, s] of Object.entries(params.requestedSchema?.properties || {})) {
        if (s.oneOf) content[k] = s.oneOf[0].const;
        else if (s.enum) content[k] = s.enum[0];
        else if (s.type === "array") content[k] = s.items?.anyOf ? [s.items.anyOf[0].const] : [s.items?.enum?.[0]];
        else if (s.type === "boolean") content[k] = true;
        else if (!k.endsWith("_custom")) content[k] = "yes";
      }
    }
    return respond(id, { action: "accept", content });
  }
  if (method === "fs/read_text_file") {
    const p = inside(params.path);
    if (!p) return respondError(id, -32602, `outside cwd: ${params.path}`);
    try {
      let text = fs.readFileSync(p, "utf8");
      if (params.line || params.limit) {
        const lines = text.split("\n");
        const s = Math.max(0, (params.line || 1) - 1);
        text = lines.slice(s, params.limit ? s + params.limit : undefined).join("\n");
      }
      return respond(id, { content: text });
    } catch (e) { return respondError(id, -32002, `resource not found: ${params.path}`); }
  }
  if (method === "fs/write_text_file") {
    const p = inside(params.path);
    if (!p) return respondError(id, -32602, `outside cwd: ${params.path}`);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, params.content);
    return respond(id, null);
  }
  respondError(id, -32601, `method not found: ${method}`);
}

let buf = "";
child.stdout.on("data", (d) => {
  buf += d;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl); buf = buf.slice(nl + 1);
    if (!line.trim()) continue;
    let msg;
    try { msg = JSON.parse(line); } catch { out(`${stamp()} <- (not JSON) ${line}`); continue; }
    if (o.quiet && msg.method === "session/update") {
      const u = msg.params.update;
      const brief = u.sessionUpdate === "agent_message_chunk" ? JSON.stringify(u.content?.text) : (u.toolCallId ? `${u.toolCallId} ${u.status ?? ""} ${u.title ?? ""}` : "");
      out(`${stamp()} <- session/update ${u.sessionUpdate} ${brief}`);
    } else {
      out(`${stamp()} <- ${line}`);
    }
    if (msg.id != null && msg.method) handleRequest(msg);
    else if (msg.id != null) {
      const p = pending.get(msg.id);
      if (p) { pending.delete(msg.id); msg.error ? p.reject(msg.error) : p.resolve(msg.result); }
    }
  }
});

let done = false;
function finish(code) {
  if (done) return;
  done = true;
  out(`${stamp()} == done (${code === 0 ? "ok" : "failed"})`);
  try { process.kill(-child.pid, "SIGTERM"); } catch {}
  setTimeout(() => { try { process.kill(-child.pid, "SIGKILL"); } catch {} process.exit(code); }, 300);
}
setTimeout(() => { out(`${stamp()} !! timeout`); finish(1); }, o.timeout);

(async () => {
  try {
    const clientCapabilities = { fs: { readTextFile: true, writeTextFile: true }, terminal: false };
    if (o.elicitation) clientCapabilities.elicitation = { form: {} };
    await request("initialize", { protocolVersion: 1, clientCapabilities, clientInfo: { name: "overseer-probe", version: "0.1.0" } });
    let sessionId;
    if (o.resume) { await request("session/resume", { sessionId: o.resume, cwd: o.cwd, mcpServers: [] }); sessionId = o.resume; }
    else if (o.load) { await request("session/load", { sessionId: o.load, cwd: o.cwd, mcpServers: [] }); sessionId = o.load; }
    else sessionId = (await request("session/new", { cwd: o.cwd, mcpServers: [] })).sessionId;
    out(`${stamp()} == session ${sessionId}`);
    if (o.mode) await request("session/set_mode", { sessionId, modeId: o.mode });
    for (const [configId, value] of o.config) await request("session/set_config_option", { sessionId, configId, value });
    for (const [n, text] of o.prompts.entries()) {
      let timer;
      if (o.killAfter != null && n === o.prompts.length - 1) {
        setTimeout(() => { out(`${stamp()} == SIGKILL the adapter's process group`); try { process.kill(-child.pid, "SIGKILL"); } catch {} }, o.killAfter);
      }
      if (o.cancelAfter != null) timer = setTimeout(() => notify("session/cancel", { sessionId }), o.cancelAfter);
      const r = await request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      clearTimeout(timer);
      out(`${stamp()} == stopReason ${r.stopReason}`);
    }
    finish(0);
  } catch (e) {
    out(`${stamp()} !! error ${JSON.stringify(e)}`);
    finish(1);
  }
})();
