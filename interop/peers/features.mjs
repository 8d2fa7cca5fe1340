// Interop peer client for 2025-11-25 features, on the TypeScript SDK 1.x (`v1`) or 2.x (`v2`).
// usage: node features.mjs v1|v2 -- CMD [ARGS...]
// Declares sampling with tools (answering with a tool_use block) and URL-mode elicitation,
// calls the server's feature tools, and prints one JSON line in the shape of features.py.
// Run from .peers/node (run-matrix.sh copies this file there), next to node_modules.
const [flavor, ...rest] = process.argv.slice(2);
const cmd = rest.slice(rest.indexOf("--") + 1);
const v1 = flavor === "v1";
const { Client } = await import(v1 ? "@modelcontextprotocol/sdk/client/index.js" : "@modelcontextprotocol/client");
const { StdioClientTransport } = await import(v1 ? "@modelcontextprotocol/sdk/client/stdio.js" : "@modelcontextprotocol/client/stdio");
const types = v1 ? await import("@modelcontextprotocol/sdk/types.js") : await import("@modelcontextprotocol/client");

const out = { client: `typescript-sdk-${flavor}`, calls: [], sampling: [], elicitations: [], completed: [] };
const capabilities = { sampling: { tools: {} }, elicitation: { url: {} } };
const client = new Client(
  { name: `interop-features-${flavor}`, version: "1" },
  v1 ? { capabilities } : { capabilities, versionNegotiation: { mode: "legacy" } },
);
// 1.x keys handlers by schema, 2.x by method name.
const on = (schema, method) => (v1 ? types[schema] : method);
client.setRequestHandler(on("CreateMessageRequestSchema", "sampling/createMessage"), async (request) => {
  out.sampling.push(request.params);
  const tool = request.params.tools?.[0];
  if (!tool) {
    return { role: "assistant", content: { type: "text", text: "no tools" }, model: "interop", stopReason: "endTurn" };
  }
  return {
    role: "assistant",
    content: [{ type: "tool_use", id: "call-1", name: tool.name, input: { city: "Paris" } }],
    model: "interop",
    stopReason: "toolUse",
  };
});
client.setRequestHandler(on("ElicitRequestSchema", "elicitation/create"), async (request) => {
  out.elicitations.push(request.params);
  return { action: "accept" };
});
client.setNotificationHandler(on("ElicitationCompleteNotificationSchema", "notifications/elicitation/complete"), (n) => {
  out.completed.push({ method: n.method, params: n.params });
});

try {
  await client.connect(new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "ignore" }));
  out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? client.transport?.protocolVersion ?? null;
  const tools = (await client.listTools()).tools;
  out.outputSchemas = Object.fromEntries(tools.map((t) => [t.name, t.outputSchema ?? null]));
  for (const [tool, args] of [["sample_with_tools", { prompt: "weather in Paris?" }], ["needs_authorization", {}], ["list_numbers", {}]]) {
    try {
      out.calls.push({ tool, result: await client.callTool({ name: tool, arguments: args }) });
    } catch (e) {
      if (typeof e.code === "number") {
        out.calls.push({ tool, error: { code: e.code, message: e.message, data: e.data } });
      } else {
        out.calls.push({ tool, exception: `${e.constructor.name}: ${e.message}` });
      }
    }
  }
  // The completion may trail the error: a ping is answered after it.
  await client.ping();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = `${e.constructor.name}: ${e.message}`;
}
console.log(JSON.stringify(out));
await client.close();
