// Interop peer client on the TypeScript SDK v2 (@modelcontextprotocol/client 2.x, stdio, or
// streamable HTTP with --url).
// usage: node client-v2.mjs [--mode legacy|auto] [--progress TOOL] [--log TOOL] [--change TOOL]
//                           [--sampling TOOL] [--sampling-text TEXT] (--url URL | -- CMD [ARGS...])
// Same behaviour and JSON line as client.mjs (the 1.x peer): progress and notifications are
// recorded at the transport level (in arrival order); the callback count is reported separately.
// --mode is ClientOptions.versionNegotiation.mode: `legacy` (the v2 default, set explicitly here)
// runs the plain 2025 `initialize` handshake; `auto` first probes `server/discover` on a
// short-lived sibling process (2026-07-28) and falls back to `initialize` on a legacy answer.
// v2 API: Client.setRequestHandler / setNotificationHandler take method strings, callTool(params,
// options) has no result-schema argument, StdioClientTransport comes from "@modelcontextprotocol/client/stdio".
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { readFileSync } from "node:fs";

// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/client/package.json", import.meta.url))).version;
  } catch {
    return "2.x";
  }
})();

const argv = process.argv.slice(2);
const opts = { mode: "legacy", progress: "echo", log: "echo", change: "change_tools", sampling: "ask_sampling", "sampling-text": "fixed sampling answer" };
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
const out = { client: `ts-sdk-${sdkVersion}`, mode: opts.mode };
const calls = [];

function argsFor(tool) {
  if (tool === "echo") return { text: "hello" };
  if (tool.includes("sampling")) return { prompt: "say something" };
  if (tool === "ask_model") return { question: "say something" };
  return {};
}

if (!["legacy", "auto"].includes(opts.mode)) throw new Error(`bad --mode ${opts.mode}`);
const client = new Client(
  { name: "interop-ts2-client", version: sdkVersion },
  { capabilities: { sampling: {} }, versionNegotiation: { mode: opts.mode } },
);
client.onerror = (e) => state.errors.push(String(e?.message ?? e));
client.setRequestHandler("sampling/createMessage", async () => {
  state.samplingRequests += 1;
  return { role: "assistant", content: { type: "text", text: opts["sampling-text"] }, model: "interop-fixed", stopReason: "endTurn" };
});
client.setNotificationHandler("notifications/message", (n) => { state.logs.push(n.params); });
client.setNotificationHandler("notifications/tools/list_changed", () => { state.listChanged += 1; });

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
    const result = await client.callTool({ name, arguments: argsFor(name) }, {
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
  out.protocolVersion = wire.find((d) => d.result?.protocolVersion)?.result.protocolVersion ?? client.getNegotiatedProtocolVersion() ?? null;
  out.server = client.getServerVersion()?.name;
  out.era = client.getProtocolEra();
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
