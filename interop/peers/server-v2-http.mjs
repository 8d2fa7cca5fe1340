// A 2026-07-28 HTTP server on the TypeScript SDK v2 (@modelcontextprotocol/server 2.x),
// for the benchmark beside mcpflow's: `createMcpHandler` (a fresh McpServer per request,
// stateless 2025-era fallback) behind plain node:http at http://127.0.0.1:$PORT/mcp,
// with the one tool the load calls, test_simple_text. node:http is bridged to the
// handler's web-standard fetch face by hand, as @modelcontextprotocol/node does.
import { createServer } from "node:http";
import { Readable } from "node:stream";
import { McpServer, createMcpHandler } from "@modelcontextprotocol/server";

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: "bench-ts2", version: "2" }, { capabilities: { tools: {} } });
  server.registerTool("test_simple_text", { description: "a fixed text" }, async () => ({
    content: [{ type: "text", text: "This is a simple text response for testing." }],
  }));
  return server;
});

const port = Number(process.env.PORT ?? 3000);
createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const body = ["GET", "HEAD"].includes(req.method) ? undefined : Buffer.concat(chunks);
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(", ") : value);
    }
    const response = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method, headers, body }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) Readable.fromWeb(response.body).pipe(res);
    else res.end();
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
}).listen(port, "127.0.0.1", () => console.error(`listening on http://127.0.0.1:${port}/mcp`));
