// Interop peer server on @modelcontextprotocol/sdk 1.x.
// usage: node server.mjs                    (stdio)
//        node server.mjs --http-port PORT   (streamable HTTP on http://127.0.0.1:PORT/mcp, one
//                                            McpServer per session, Host/Origin checked for localhost)
// Tools: echo(text) [progress when a progressToken is given, an info log, then the text],
// change_tools() [adds a tool: tools/list_changed mid-call], ask_sampling(prompt) [sampling during the call].
// The log and the explicit list_changed are sent as related to the tool call, so over HTTP they
// ride the call's own SSE stream (unrelated notifications go to the GET stream, if any).
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";

// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url))).version;
  } catch {
    return "1.x";
  }
})();

const argv = process.argv.slice(2);
const httpPort = argv[0] === "--http-port" ? Number(argv[1]) : undefined;
if (argv.length && !(httpPort > 0 && argv.length === 2)) throw new Error(`usage: server.mjs [--http-port PORT], got ${argv.join(" ")}`);

let added = 0;
function makeServer() {
  const server = new McpServer(
    { name: `interop-ts-${sdkVersion}`, version: sdkVersion },
    { capabilities: { logging: {}, tools: { listChanged: true } } },
  );

  async function progress(extra, progress, total, message) {
    const token = extra._meta?.progressToken;
    if (token === undefined) return;
    await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total, message } });
  }

  server.registerTool(
    "echo",
    { description: "Echo the text; reports progress and logs first", inputSchema: { text: z.string() } },
    async ({ text }, extra) => {
      await progress(extra, 1, 2, "echo: halfway");
      await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: `echo: ${text}` } });
      await progress(extra, 2, 2, "echo: done");
      return { content: [{ type: "text", text }] };
    },
  );

  server.registerTool(
    "change_tools",
    { description: "Add a tool and send tools/list_changed during the call" },
    async (extra) => {
      added += 1;
      const name = `added_${added}`;
      // registerTool on a connected server sends notifications/tools/list_changed itself, unrelated
      // to this call (the GET stream over HTTP); over HTTP also send one on the call's stream.
      server.registerTool(name, { description: "added by change_tools" }, async () => ({ content: [{ type: "text", text: "added" }] }));
      if (httpPort !== undefined) await extra.sendNotification({ method: "notifications/tools/list_changed" });
      // Make sure the notification is written before the response.
      await new Promise((r) => setTimeout(r, 20));
      return { content: [{ type: "text", text: name }] };
    },
  );

  server.registerTool(
    "ask_sampling",
    { description: "Ask the client for sampling during the call", inputSchema: { prompt: z.string() } },
    async ({ prompt }, extra) => {
      const result = await server.server.createMessage(
        { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens: 50 },
        { relatedRequestId: extra.requestId },
      );
      const content = Array.isArray(result.content) ? result.content[0] : result.content;
      return { content: [{ type: "text", text: content?.text ?? JSON.stringify(content) }] };
    },
  );
  return server;
}

async function readJson(req) {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const text = Buffer.concat(chunks).toString("utf8");
  return text ? JSON.parse(text) : undefined;
}

function jsonError(res, status, message) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
}

if (httpPort === undefined) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const sessions = new Map(); // Mcp-Session-Id -> transport
  const http = createServer(async (req, res) => {
    try {
      if (new URL(req.url, "http://127.0.0.1").pathname !== "/mcp") return jsonError(res, 404, "not found");
      const body = req.method === "POST" ? await readJson(req) : undefined;
      const sid = req.headers["mcp-session-id"];
      let transport = sid ? sessions.get(sid) : undefined;
      if (!transport) {
        if (sid) return jsonError(res, 404, "Session not found");
        if (req.method !== "POST" || !isInitializeRequest(body)) return jsonError(res, 400, "Bad Request: no valid session ID");
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableDnsRebindingProtection: true,
          allowedHosts: [`127.0.0.1:${httpPort}`, `localhost:${httpPort}`],
          onsessioninitialized: (id) => sessions.set(id, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    } catch (e) {
      console.error(e);
      if (!res.headersSent) jsonError(res, 500, String(e?.message ?? e));
    }
  });
  http.listen(httpPort, "127.0.0.1", () => console.error(`serving streamable HTTP on http://127.0.0.1:${httpPort}/mcp`));
}
