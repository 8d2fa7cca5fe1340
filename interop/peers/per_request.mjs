// Interop peer client for the 2026-07-28 era on the TypeScript SDK v2 (@modelcontextprotocol/client 2.x).
// usage: node per_request.mjs [--mode auto|legacy|2026-07-28] [--progress TOOL] [--elicit TOOL] [--change TOOL]
//                        (--url URL | -- CMD [ARGS...])
// Same steps and JSON line as per_request.py: connect (auto probes server/discover), a call with
// progress, a call whose elicitation is answered by the registered handler (inside an
// input_required result on a 2026-07-28 connection), and a tool-list change seen on
// subscriptions/listen.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { readFileSync } from "node:fs";

const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/client/package.json", import.meta.url))).version;
  } catch {
    return "2.x";
  }
})();

const argv = process.argv.slice(2);
const opts = { mode: "auto", progress: "test_tool_with_progress", elicit: "test_elicitation", change: "" };
let cmd = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--") { cmd = argv.slice(i + 1); break; }
  const m = a.match(/^--([^=]+)(?:=(.*))?$/);
  if (!m) throw new Error(`bad argument ${a}`);
  opts[m[1]] = m[2] !== undefined ? m[2] : argv[++i];
}
if (Boolean(opts.url) === (cmd.length > 0)) throw new Error("give either --url URL or -- CMD [ARGS...]");

const out = { client: `ts-sdk-${sdkVersion}`, mode: opts.mode, transport: opts.url ? "http" : "stdio" };
const elicitations = [];
let listChanged = 0;
const mode = ["auto", "legacy"].includes(opts.mode) ? opts.mode : { pin: opts.mode };
const client = new Client(
  { name: "interop-ts2-per-request", version: sdkVersion },
  { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } },
);
client.setRequestHandler("elicitation/create", async (request) => {
  elicitations.push(request.params?.message ?? "");
  return { action: "accept", content: { username: "interop", email: "interop@example.com" } };
});
client.setNotificationHandler("notifications/tools/list_changed", () => { listChanged += 1; });

const textOf = (r) => (r.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("\n");
const argsFor = (tool) => (tool === "echo" ? { text: "hello" } : {});
const transport = opts.url
  ? new StreamableHTTPClientTransport(new URL(opts.url))
  : new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "inherit" });

const t0 = performance.now();
try {
  await client.connect(transport, { timeout: 20000 });
  out.connect_ms = Math.round((performance.now() - t0) * 10) / 10;
  out.protocol_version = client.getNegotiatedProtocolVersion();
  out.server = client.getServerVersion()?.name;
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();

  const progress = [];
  let r = await client.callTool({ name: opts.progress, arguments: argsFor(opts.progress) }, {
    onprogress: (p) => progress.push(p.progress),
    timeout: 20000,
  });
  out.progress_call = { text: textOf(r), progress, is_error: Boolean(r.isError) };

  r = await client.callTool({ name: opts.elicit, arguments: opts.elicit.startsWith("test_") ? { message: "who are you?" } : argsFor(opts.elicit) }, { timeout: 20000 });
  out.elicit_call = { text: textOf(r), elicitations, is_error: Boolean(r.isError) };

  if (opts.change) {
    const sub = await client.listen({ toolsListChanged: true }, { timeout: 20000 });
    out.listen_honored = JSON.stringify(sub.honoredFilter);
    r = await client.callTool({ name: opts.change, arguments: {} }, { timeout: 20000 });
    out.change_call = { text: textOf(r), is_error: Boolean(r.isError) };
    const deadline = Date.now() + 10000;
    while (listChanged === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
    out.list_changed = listChanged > 0;
    await sub.close();
  }
} catch (e) {
  out.error = `${e?.name ?? "Error"}: ${e?.message ?? e}`;
}
console.log(JSON.stringify(out));
await client.close().catch(() => {});
process.exit(0);
