// Interop peer: the TypeScript SDK 1.x client runs tasks (2025-11-25, experimental)
// against a server: a required-task tool with progress, a task that elicits (the
// question arrives with tasks/result), an optional tool called directly, and
// tasks/list and tasks/cancel.
// usage: node tasks.mjs (--url URL | -- CMD [ARGS...]); prints one JSON line.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const argv = process.argv.slice(2);
let url = null;
let cmd = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--") { cmd = argv.slice(i + 1); break; }
  if (argv[i] === "--url") url = argv[++i];
}

const out = { capabilities: null, runs: {}, elicitations: [], errors: [] };
const client = new Client({ name: "ts-tasks", version: "1" }, { capabilities: { elicitation: { form: {} } } });
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  out.elicitations.push(request.params._meta?.["io.modelcontextprotocol/related-task"] ?? null);
  return { action: "accept", content: { name: "Ada" } };
});
const transport = url
  ? new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({ command: cmd[0], args: cmd.slice(1), stderr: "ignore" });

async function stream(name) {
  const run = { statuses: [], taskId: null, text: null, error: null };
  const messages = client.experimental.tasks.callToolStream({ name, arguments: {} }, CallToolResultSchema, { task: { ttl: 60000 } });
  for await (const m of messages) {
    if (m.type === "taskCreated") { run.taskId = m.task.taskId; run.statuses.push(m.task.status); }
    else if (m.type === "taskStatus") run.statuses.push(m.task.status);
    else if (m.type === "result") {
      run.text = m.result.content?.[0]?.text ?? null;
      run.relatedTask = m.result._meta?.["io.modelcontextprotocol/related-task"]?.taskId ?? null;
    }
    else if (m.type === "error") run.error = String(m.error?.message ?? m.error);
  }
  return run;
}

try {
  await client.connect(transport);
  out.capabilities = client.getServerCapabilities()?.tasks ?? null;
  out.runs.required = await stream("test_task_required");
  out.runs.elicitation = await stream("test_task_elicitation");
  const direct = await client.callTool({ name: "test_task_optional", arguments: {} });
  out.runs.optionalDirect = direct.content?.[0]?.text ?? null;
  const listed = await client.experimental.tasks.listTasks();
  out.listed = listed.tasks.map((t) => t.taskId);
  try {
    await client.experimental.tasks.cancelTask(out.runs.required.taskId);
    out.cancelFinished = "accepted";
  } catch (e) {
    out.cancelFinished = e.code ?? String(e);
  }
} catch (e) {
  out.errors.push(String(e?.stack ?? e));
} finally {
  await client.close().catch(() => {});
}
console.log(JSON.stringify(out));
process.exit(0);
