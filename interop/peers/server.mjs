// Interop peer server on @modelcontextprotocol/sdk 1.x (stdio).
// Tools: echo(text) [progress when a progressToken is given, an info log, then the text],
// change_tools() [adds a tool: tools/list_changed mid-call], ask_sampling(prompt) [sampling during the call].
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { readFileSync } from "node:fs";
import { z } from "zod";

// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const sdkVersion = (() => {
  try {
    return JSON.parse(readFileSync(new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url))).version;
  } catch {
    return "1.x";
  }
})();

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
    await server.sendLoggingMessage({ level: "info", data: `echo: ${text}` }, extra.sessionId);
    await progress(extra, 2, 2, "echo: done");
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

await server.connect(new StdioServerTransport());
