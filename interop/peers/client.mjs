// Interop peer client on @modelcontextprotocol/sdk 1.x (stdio, or streamable HTTP with --url).
// usage: node client.mjs [--progress TOOL] [--log TOOL] [--change TOOL] [--sampling TOOL]
//                        [--sampling-text TEXT] (--url URL | -- CMD [ARGS...])
// Prints one JSON line. Progress and notifications are recorded at the transport level
// (in arrival order), because the TS 1.x client drops a progress notification that
// arrives in the same read as the response (typescript-sdk #2580); the callback count
// is reported separately.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url))).version;
  } catch {
    return "1.x";
  }
})();

const argv = process.argv.slice(2);
const opts = { progress: "echo", log: "echo", change: "change_tools", sampling: "ask_sampling", "sampling-text": "fixed sampling answer" };
let cmd = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--") { cmd = argv.slice(i + 1); break; }
  const m = a.match(/^--([^=]+)(?:=(.*))?$/);
  if (!m) throw new Error(`bad argument ${a}`);
  opts[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
}

const wire = [];
const state = { logs: [], listChanged: 0, samplingRequests: 0, errors: [] };
const out = { client: `ts-sdk-${sdkVersion}`, mode: "initialize" };
const calls = [];

function argsFor(tool) {
  if (tool === "echo") return { text: "hello" };
  if (tool.includes("sampling")) return { prompt: "say something" };
  if (tool === "ask_model") return { question: "say something" };
  return {};
}

const client = new Client({ name: "interop-ts-client", version: sdkVersion }, { capabilities: { sampling: {} } });
client.onerror = (e) => state.errors.push(String(e?.message ?? e));
client.setRequestHandler(CreateMessageRequestSchema, async () => {
  state.samplingRequests += 1;
  return { role: "assistant", content: { type: "text", text: opts["sampling-text"] }, model: "interop-fixed", stopReason: "endTurn" };
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { state.logs.push(n.params); });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { state.listChanged += 1; });

if (Boolean(opts.url) === (cmd.length > 0)) throw new Error("give either --url URL or -- CMD [ARGS...]");
const transport = opts.url
  ? new StreamableHTTPClientTransport(new URL(opts.url))
  : new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "inherit" });
out.transport = opts.url ? "streamable-http" : "stdio";

async function doCall(name) {
  const start = wire.length;
  const logsBefore = state.logs.length;
  const lcBefore = state.listChanged;
  let progressCallbacks = 0;
  const entry = { tool: name };
  const t0 = Date.now();
  try {
    const result = await client.callTool({ name, arguments: argsFor(name) }, CallToolResultSchema, {
      onprogress: () => { progressCallbacks += 1; },
      timeout: 20000,
    });
    entry.text = (result.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
    entry.is_error = Boolean(result.isError);
  } catch (e) {
    entry.error = String(e?.message ?? e);
  }
  entry.seconds = (Date.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, 300));
  const slice = wire.slice(start);
  const resp = slice.find((d) => d.id !== undefined && (d.result !== undefined || d.error !== undefined));
  const order = [];
  let answered = false, before = 0, after = 0;
  const tokens = [];
  for (const d of slice) {
    if (resp && d === resp) { answered = true; order.push("RESPONSE"); continue; }
    if (!d.method) continue;
    order.push(d.method);
    if (d.method === "notifications/progress") {
      tokens.push(d.params?.progressToken);
      if (answered) after += 1; else before += 1;
    }
  }
  entry.wire = { order, progress_before_result: before, progress_after_result: after, progress_tokens: tokens };
  entry.progress_callbacks = progressCallbacks;
  entry.logs = state.logs.length - logsBefore;
  entry.list_changed = state.listChanged - lcBefore;
  return entry;
}

const watchdog = setTimeout(() => { out.ok = false; out.error = "client watchdog: 25 s"; finish(1); }, 25000);
async function finish(code) {
  clearTimeout(watchdog);
  // Over HTTP, end the session explicitly (DELETE with the Mcp-Session-Id).
  if (opts.url && transport.sessionId) {
    const ended = transport.terminateSession().catch((e) => state.errors.push(`terminateSession: ${e?.message ?? e}`));
    await Promise.race([ended, new Promise((r) => setTimeout(r, 2000))]);
  }
  out.calls = calls;
  out.logs = state.logs;
  out.list_changed_total = state.listChanged;
  out.sampling_requests = state.samplingRequests;
  out.sdk_errors = state.errors;
  out.wire_methods = wire.map((d) => d.method ?? (d.id !== undefined ? "response" : d));
  process.stdout.write(JSON.stringify(out) + "\n");
  transport.close().catch(() => {}).finally(() => process.exit(code));
}

// Tap the transport: whatever handler the Protocol installs, every inbound message is
// recorded first, in arrival order.
let innerOnMessage;
Object.defineProperty(transport, "onmessage", {
  configurable: true,
  get() { return innerOnMessage && ((msg, extra) => { wire.push(msg); innerOnMessage(msg, extra); }); },
  set(f) { innerOnMessage = f; },
});

try {
  await client.connect(transport);
  out.protocolVersion = wire.find((d) => d.result?.protocolVersion)?.result.protocolVersion ?? null;
  out.server = client.getServerVersion()?.name;
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  const names = [];
  for (const n of [opts.progress, opts.log, opts.change, opts.sampling]) if (n && !names.includes(n)) names.push(n);
  for (const n of names) calls.push(await doCall(n));
  if (opts.change) out.tools_after = (await client.listTools()).tools.map((t) => t.name);
  out.ok = true;
  finish(0);
} catch (e) {
  out.ok = false;
  out.error = String(e?.stack ?? e);
  finish(0);
}
