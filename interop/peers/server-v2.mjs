// Interop peer server on the TypeScript SDK v2 (@modelcontextprotocol/server 2.x, stdio).
// Same tools and behaviour as server.mjs (the 1.x peer):
// echo(text) [progress when a progressToken is given, an info log, then the text],
// change_tools() [adds a tool: tools/list_changed mid-call], ask_sampling(prompt) [sampling during the call].
// v2 API: McpServer.registerTool(name, { inputSchema: z.object(...) }, (args, ctx) => ...), where the
// handler context carries ctx.mcpReq.{_meta, notify, log, requestSampling}; StdioServerTransport
// comes from "@modelcontextprotocol/server/stdio".
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import { readFileSync } from "node:fs";
import { z } from "zod";

// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/server/package.json", import.meta.url))).version;
  } catch {
    return "2.x";
  }
})();

const server = new McpServer(
  { name: `interop-ts2-${sdkVersion}`, version: sdkVersion },
  { capabilities: { logging: {}, tools: { listChanged: true } } },
);

async function progress(ctx, progress, total, message) {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return;
  await ctx.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress, total, message } });
}

server.registerTool(
  "echo",
  { description: "Echo the text; reports progress and logs first", inputSchema: z.object({ text: z.string() }) },
  async ({ text }, ctx) => {
    await progress(ctx, 1, 2, "echo: halfway");
    await ctx.mcpReq.log("info", `echo: ${text}`);
    await progress(ctx, 2, 2, "echo: done");
    return { content: [{ type: "text", text }] };
  },
);

let added = 0;
server.registerTool(
  "change_tools",
  { description: "Add a tool and send tools/list_changed during the call" },
  async () => {
    added += 1;
    const name = `added_${added}`;
    // registerTool on a connected server sends notifications/tools/list_changed itself.
    server.registerTool(name, { description: "added by change_tools" }, async () => ({ content: [{ type: "text", text: "added" }] }));
    // Make sure the notification is written before the response.
    await new Promise((r) => setTimeout(r, 20));
    return { content: [{ type: "text", text: name }] };
  },
);

server.registerTool(
  "ask_sampling",
  { description: "Ask the client for sampling during the call", inputSchema: z.object({ prompt: z.string() }) },
  async ({ prompt }, ctx) => {
    const result = await ctx.mcpReq.requestSampling({
      messages: [{ role: "user", content: { type: "text", text: prompt } }],
      maxTokens: 50,
    });
    const content = Array.isArray(result.content) ? result.content[0] : result.content;
    return { content: [{ type: "text", text: content?.text ?? JSON.stringify(content) }] };
  },
);

await server.connect(new StdioServerTransport());
