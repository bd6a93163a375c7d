#!/usr/bin/env node
// A scripted model server that speaks two vendors' real wire formats, so the
// real agent adapters (claude-agent-acp, codex-acp) can run fully offline:
//   - Anthropic Messages API: POST /v1/messages (SSE when "stream": true, JSON
//     otherwise), POST /v1/messages/count_tokens, GET /v1/models.
//   - OpenAI Responses API: POST /v1/responses (SSE), GET /v1/models.
// It also answers CONNECT (an HTTPS proxy request) with 403 and logs it, so an
// adapter launched with HTTPS_PROXY pointing here shows, in the log, every
// vendor host it would have reached, and fails at once instead of hanging.
//
// Usage: node model-server.mjs --script FILE.json --log FILE.jsonl [--port 0]
// Prints exactly one first line, "listening PORT", once ready.
//
// Only Node's built-in modules. See README.md for the script format.
import http from "node:http";
import fs from "node:fs";

// ---------------------------------------------------------------- arguments
const args = { port: 0, script: null, log: null, host: "127.0.0.1" };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const v = process.argv[i + 1];
  if (a === "--port") { args.port = Number(v); i++; }
  else if (a === "--script") { args.script = v; i++; }
  else if (a === "--log") { args.log = v; i++; }
  else if (a === "--host") { args.host = v; i++; }
  else if (a === "-h" || a === "--help") {
    process.stdout.write("usage: node model-server.mjs --script FILE.json --log FILE.jsonl [--port 0] [--host 127.0.0.1]\n");
    process.exit(0);
  } else {
    process.stderr.write(`model-server: unknown argument ${a}\n`);
    process.exit(2);
  }
}

// ---------------------------------------------------------------- script
// {"rules": [{"when": "substring" | "*", "reply": {...}, "times": 1 | "forever"}],
//  "generic": "text for side requests"}
let script = { rules: [] };
if (args.script) script = JSON.parse(fs.readFileSync(args.script, "utf8"));
const rules = (script.rules || []).map((r, index) => ({
  index,
  when: r.when ?? "*",
  reply: r.reply,
  left: r.times === "forever" || r.times === 0 ? Infinity : (r.times ?? 1),
  used: 0,
}));
const GENERIC = script.generic ?? "OK.";
// Requests that carry the agent's tools but are not the agent's main turn:
// Claude Code's prompt suggestion (a fork of the conversation whose latest
// user message starts "[SUGGESTION MODE: ..."). They get the generic reply.
const SIDE_MARKERS = ["[SUGGESTION MODE", ...(script.side || [])];

function pickRule(latest) {
  // Among the rules not used up, the one whose `when` occurs in the latest
  // input and ends LAST in it (Claude Code merges an interrupted prompt with
  // the next one: "hang\n\n[Request interrupted by user]\n\nnext"); ties go
  // to the earlier rule. Else the first not-used-up "*" rule.
  let best = null, bestEnd = -1;
  for (const r of rules) {
    if (r.left <= 0 || r.when === "*") continue;
    const at = latest.lastIndexOf(r.when);
    if (at >= 0 && at + r.when.length > bestEnd) { best = r; bestEnd = at + r.when.length; }
  }
  if (best) return best;
  for (const r of rules) {
    if (r.left > 0 && r.when === "*") return r;
  }
  return null;
}

// ---------------------------------------------------------------- log
const logFd = args.log ? fs.openSync(args.log, "a") : null;
let seq = 0;
function log(entry) {
  if (logFd === null) return;
  fs.writeSync(logFd, JSON.stringify({ t: new Date().toISOString(), ...entry }) + "\n");
}
const SECRET = /^(authorization|x-api-key|api-key|cookie|proxy-authorization|openai-api-key|x-goog-api-key)$/i;
function cleanHeaders(h) {
  const out = {};
  for (const [k, v] of Object.entries(h)) out[k] = SECRET.test(k) ? "<redacted>" : v;
  return out;
}

// ---------------------------------------------------------------- helpers
function readBody(req) {
  return new Promise((resolve) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", () => resolve(""));
  });
}
function sendJson(res, status, obj, headers = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}
// Split text in a few deltas (deterministic: by words, about 4 chunks).
function chunks(text) {
  if (!text) return [];
  const words = text.split(/(?<=\s)/);
  const n = Math.max(1, Math.ceil(words.length / 4));
  const out = [];
  for (let i = 0; i < words.length; i += n) out.push(words.slice(i, i + n).join(""));
  return out;
}
function splitJson(s) {
  // Deliver tool input JSON in 2-3 pieces, as the real APIs do.
  if (s.length < 8) return [s];
  const a = Math.floor(s.length / 3), b = Math.floor((2 * s.length) / 3);
  return [s.slice(0, a), s.slice(a, b), s.slice(b)];
}
const estimateTokens = (body) => Math.max(1, Math.round(JSON.stringify(body ?? "").length / 4));

// Text of one content value (string, or array of blocks of any vendor).
function textOf(c) {
  if (c == null) return "";
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map(textOf).join("\n");
  if (typeof c === "object") {
    if (typeof c.text === "string") return c.text;
    if (c.type === "tool_result") return textOf(c.content);
    if (typeof c.output === "string") return c.output; // function_call_output
    if (c.output != null) return textOf(c.output);
    if (c.content != null) return textOf(c.content);
  }
  return "";
}

// ================================================================ Anthropic
function anthropicLatest(body) {
  // The latest USER message (the user's text or the tool results). Claude
  // Code also appends messages with role "system" (environment notes): skip.
  const msgs = (body.messages || []).filter((m) => m.role === "user");
  const last = msgs[msgs.length - 1];
  return last ? textOf(last.content) : "";
}
function anthropicIsMain(body) {
  return Array.isArray(body.tools) && body.tools.length > 0;
}
function anthropicBlocks(reply, idBase) {
  // -> list of content blocks, stop_reason
  const blocks = [];
  if (reply.text != null) blocks.push({ type: "text", text: String(reply.text) });
  const tools = reply.tools || (reply.tool ? [reply.tool] : []);
  tools.forEach((t, i) => {
    blocks.push({ type: "tool_use", id: t.id || `toolu_${idBase}_${i}`, name: t.name, input: t.input ?? {} });
  });
  return { blocks, stop: tools.length ? "tool_use" : "end_turn" };
}
function anthropicError(res, status, message, extraHeaders = {}) {
  const type = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
  }[status] || "api_error";
  sendJson(res, status, { type: "error", error: { type, message: message || (status === 529 ? "Overloaded" : type) } },
    { "request-id": `req_ovs_${seq}`, ...extraHeaders });
}
function anthropicRespond(req, res, body, reply, idBase) {
  const model = body.model || "claude-scripted";
  const { blocks, stop } = anthropicBlocks(reply, idBase);
  const inTok = estimateTokens(body.messages);
  const outTok = Math.max(1, estimateTokens(blocks));
  const usage = { input_tokens: inTok, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outTok };
  const id = `msg_ovs_${idBase}`;
  if (!body.stream) {
    sendJson(res, 200, { id, type: "message", role: "assistant", model, content: blocks, stop_reason: stop, stop_sequence: null, usage },
      { "request-id": `req_ovs_${seq}` });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "request-id": `req_ovs_${seq}` });
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev("message_start", { message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
  ev("ping", {});
  blocks.forEach((b, index) => {
    if (b.type === "text") {
      ev("content_block_start", { index, content_block: { type: "text", text: "" } });
      for (const c of chunks(b.text)) ev("content_block_delta", { index, delta: { type: "text_delta", text: c } });
    } else {
      ev("content_block_start", { index, content_block: { type: "tool_use", id: b.id, name: b.name, input: {} } });
      for (const c of splitJson(JSON.stringify(b.input))) ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: c } });
    }
    ev("content_block_stop", { index });
  });
  ev("message_delta", { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: outTok } });
  ev("message_stop", {});
  res.end();
}

// ================================================================ OpenAI Responses
function openaiLatest(body) {
  // The latest user message or function/custom tool output.
  const input = body.input;
  if (typeof input === "string") return input;
  if (!Array.isArray(input)) return "";
  for (let i = input.length - 1; i >= 0; i--) {
    const it = input[i];
    if (it.type === "function_call_output" || it.type === "custom_tool_call_output") return textOf(it.output);
    if ((it.type === "message" || !it.type) && it.role === "user") return textOf(it.content);
  }
  return "";
}

// The session's working directory, as the agent told the model, for the
// {{cwd}} placeholder in replies.
function findCwd(body) {
  const all = JSON.stringify(body);
  let m = all.match(/Primary working directory: ([^\\"]+?)(?:\\n|")/) || all.match(/"live_cwd":"([^"]+)"/)
    || all.match(/<cwd>([^<]+)<\/cwd>/);
  return m ? m[1] : null;
}
function substitute(v, vars) {
  if (typeof v === "string") return v.replace(/\{\{(\w+)\}\}/g, (all, k) => (vars[k] != null ? vars[k] : all));
  if (Array.isArray(v)) return v.map((x) => substitute(x, vars));
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x, vars)]));
  return v;
}
function openaiIsMain(body) {
  return Array.isArray(body.tools) && body.tools.length > 0;
}
function openaiError(res, status, message) {
  const code = status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error";
  sendJson(res, status, { error: { message: message || (status === 529 ? "Overloaded" : code), type: code, param: null, code } });
}
function openaiRespond(req, res, body, reply, idBase) {
  const model = body.model || "gpt-scripted";
  const respId = `resp_ovs_${idBase}`;
  const items = [];
  if (reply.text != null) {
    items.push({ type: "message", id: `msg_ovs_${idBase}`, status: "completed", role: "assistant",
      content: [{ type: "output_text", text: String(reply.text), annotations: [] }] });
  }
  const tools = reply.tools || (reply.tool ? [reply.tool] : []);
  tools.forEach((t, i) => {
    const callId = t.id || `call_${idBase}_${i}`;
    if (t.custom) {
      // A freeform ("custom") tool such as apply_patch in some Codex models.
      items.push({ type: "custom_tool_call", id: `ctc_${idBase}_${i}`, status: "completed", call_id: callId, name: t.name, input: String(t.input ?? "") });
    } else {
      const a = typeof t.input === "string" ? t.input : JSON.stringify(t.input ?? {});
      items.push({ type: "function_call", id: `fc_${idBase}_${i}`, status: "completed", call_id: callId, name: t.name, arguments: a });
    }
  });
  const inTok = estimateTokens(body.input);
  const outTok = Math.max(1, estimateTokens(items));
  const usage = { input_tokens: inTok, input_tokens_details: { cached_tokens: 0 }, output_tokens: outTok, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: inTok + outTok };
  const base = { id: respId, object: "response", created_at: Math.floor(Date.now() / 1000), model, status: "in_progress", output: [], usage: null };
  if (body.stream === false) {
    sendJson(res, 200, { ...base, status: "completed", output: items, usage });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive", "x-request-id": `req_ovs_${seq}` });
  let sn = 0;
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sn++, ...data })}\n\n`);
  ev("response.created", { response: base });
  ev("response.in_progress", { response: base });
  items.forEach((item, output_index) => {
    if (item.type === "message") {
      const text = item.content[0].text;
      ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
      ev("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
      for (const c of chunks(text)) ev("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta: c });
      ev("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text });
      ev("response.content_part.done", { item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text, annotations: [] } });
    } else if (item.type === "function_call") {
      ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } });
      for (const c of splitJson(item.arguments)) ev("response.function_call_arguments.delta", { item_id: item.id, output_index, delta: c });
      ev("response.function_call_arguments.done", { item_id: item.id, output_index, arguments: item.arguments });
    } else {
      ev("response.output_item.added", { output_index, item: { ...item, status: "in_progress", input: "" } });
      for (const c of splitJson(item.input)) ev("response.custom_tool_call_input.delta", { item_id: item.id, output_index, delta: c });
      ev("response.custom_tool_call_input.done", { item_id: item.id, output_index, input: item.input });
    }
    ev("response.output_item.done", { output_index, item });
  });
  ev("response.completed", { response: { ...base, status: "completed", output: items, usage } });
  res.end();
}

// ================================================================ dispatch
const hanging = new Set();
function scripted(vendor, req, res, body, entry) {
  const latest = vendor === "anthropic" ? anthropicLatest(body) : openaiLatest(body);
  const isMain = (vendor === "anthropic" ? anthropicIsMain(body) : openaiIsMain(body))
    && !SIDE_MARKERS.some((m) => latest.includes(m));
  // Ids: unique within a server run (seq) and across runs of one conversation
  // (the conversation length), and deterministic for a given script.
  const convLen = vendor === "anthropic" ? (body.messages || []).length : (Array.isArray(body.input) ? body.input.length : 1);
  const idBase = `ovs${String(convLen).padStart(3, "0")}_${String(seq).padStart(3, "0")}`;
  entry.main = isMain;
  entry.latest = latest.length > 2000 ? latest.slice(0, 2000) + "…" : latest;
  let reply;
  if (!isMain) {
    reply = { text: GENERIC };
    entry.reply = "generic";
  } else {
    const rule = pickRule(latest);
    if (!rule) {
      reply = { text: "(model-server: no scripted rule matched)" };
      entry.reply = "no-rule";
    } else {
      rule.left--; rule.used++;
      reply = substitute(rule.reply || { text: "" }, { cwd: findCwd(body), latest });
      entry.rule = rule.index;
      entry.when = rule.when;
      entry.reply = reply;
    }
  }
  log(entry);
  if (reply.delayMs) {
    setTimeout(() => answer(vendor, req, res, body, reply, idBase), reply.delayMs);
  } else {
    answer(vendor, req, res, body, reply, idBase);
  }
}
function answer(vendor, req, res, body, reply, idBase) {
  if (reply.hang) {
    hanging.add(res);
    res.on("close", () => {
      hanging.delete(res);
      log({ seq: -1, event: "hang-closed-by-client", id: idBase });
    });
    return;
  }
  if (reply.status) {
    const extra = {};
    if (reply.retryAfterMs != null) extra["retry-after-ms"] = String(reply.retryAfterMs);
    if (reply.retryAfter != null) extra["retry-after"] = String(reply.retryAfter);
    if (reply.shouldRetry != null) extra["x-should-retry"] = String(reply.shouldRetry);
    if (vendor === "anthropic") anthropicError(res, reply.status, reply.message, extra);
    else { for (const [k, v] of Object.entries(extra)) res.setHeader(k, v); openaiError(res, reply.status, reply.message); }
    return;
  }
  if (vendor === "anthropic") anthropicRespond(req, res, body, reply, idBase);
  else openaiRespond(req, res, body, reply, idBase);
}

const server = http.createServer(async (req, res) => {
  const raw = await readBody(req);
  seq++;
  const url = new URL(req.url, "http://x");
  const path = url.pathname;
  let body = null;
  if (raw) { try { body = JSON.parse(raw); } catch { body = raw; } }
  const entry = { seq, method: req.method, path, query: url.search || undefined, headers: cleanHeaders(req.headers), body };

  if (req.method === "POST" && /\/v1\/messages$/.test(path)) return scripted("anthropic", req, res, body || {}, entry);
  if (req.method === "POST" && /\/responses$/.test(path)) return scripted("openai", req, res, body || {}, entry);
  if (req.method === "POST" && /\/v1\/messages\/count_tokens$/.test(path)) {
    entry.reply = "count_tokens"; log(entry);
    return sendJson(res, 200, { input_tokens: estimateTokens(body?.messages) });
  }
  if (req.method === "GET" && /\/models$/.test(path)) {
    entry.reply = "models"; log(entry);
    // Both vendors' list shapes in one object: Anthropic reads data[].id,
    // Codex reads models[] (its own catalogue format); an empty list is fine.
    return sendJson(res, 200, { data: [], models: [], has_more: false, object: "list" });
  }
  if (req.method === "HEAD" || (req.method === "GET" && (path === "/" || path === "/v1" || path === "/v1/"))) {
    entry.reply = "ok"; log(entry);
    return sendJson(res, 200, {});
  }
  entry.reply = "404"; log(entry);
  sendJson(res, 404, { type: "error", error: { type: "not_found_error", message: `model-server: no route ${req.method} ${path}` } });
});

// An adapter run with HTTPS_PROXY=http://127.0.0.1:PORT asks us to CONNECT to
// vendor hosts: log the host and refuse, so nothing waits on a closed network.
server.on("connect", (req, socket) => {
  seq++;
  log({ seq, method: "CONNECT", path: req.url, headers: cleanHeaders(req.headers), reply: "403-refused" });
  socket.on("error", () => {});
  socket.end("HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
});
server.keepAliveTimeout = 65000;
server.requestTimeout = 0;

server.listen(args.port, args.host, () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
function shutdown() {
  for (const r of hanging) r.destroy();
  server.close();
  process.exit(0);
}
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
