// Runs in the browser page (bundled by run.mjs with esbuild): the official TypeScript MCP client
// (@modelcontextprotocol/sdk 1.x) talks to the server named by ?url=... from this page's origin.
// Steps: connect (initialize), listTools, callTool test_tool_with_progress counting progress
// notifications, terminateSession (DELETE), close. The outcome is left in window.__result and
// logged as one console line "MCP_RESULT {json}"; window.__step names the step in progress.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const params = new URLSearchParams(location.search);
const url = params.get('url');
const stepMs = Number(params.get('stepMs') || 10000);

const result = {
  origin: location.origin,
  initialized: false,
  sessionId: false, // whether the client learned Mcp-Session-Id (needs Access-Control-Expose-Headers)
  protocolVersion: null,
  server: null,
  tools: 0,
  progress: 0,
  callText: null,
  terminated: false,
  error: null,
  errorStep: null,
  timedOut: false, // a step outlived its bound (no answer), which is no refusal
  transportErrors: [], // errors the transport reported on the side (e.g. the standalone GET stream)
};

function describe(e) {
  if (!e) return String(e);
  const code = typeof e.code === 'number' ? ` (code ${e.code})` : '';
  return `${e.name || 'Error'}: ${e.message || e}${code}`;
}

async function step(name, fn) {
  window.__step = name;
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      result.timedOut = true;
      reject(new Error(`step '${name}' did not finish within ${stepMs} ms`));
    }, stepMs);
  });
  try {
    return await Promise.race([fn(), timeout]);
  } catch (e) {
    result.errorStep = name;
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

async function main() {
  if (!url) throw new Error('no ?url= given');
  const transport = new StreamableHTTPClientTransport(new URL(url));
  let closing = false;
  const client = new Client({ name: 'mcpflow-browser-harness', version: '0.1.0' });
  client.onerror = (e) => {
    if (!closing && result.transportErrors.length < 10) result.transportErrors.push(`${window.__step}: ${describe(e)}`);
  };
  try {
    await step('connect', () => client.connect(transport));
    result.initialized = true;
    result.sessionId = Boolean(transport.sessionId);
    result.protocolVersion = transport.protocolVersion ?? null;
    result.server = client.getServerVersion() ?? null;

    const listed = await step('listTools', () => client.listTools());
    result.tools = listed.tools.length;

    const called = await step('callTool', () =>
      client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
        onprogress: () => {
          result.progress += 1;
        },
      }),
    );
    const text = (called.content || []).find((c) => c.type === 'text');
    result.callText = text ? text.text : null;
    if (called.isError) throw new Error(`tool returned isError: ${result.callText}`);

    await step('terminateSession', () => transport.terminateSession());
    result.terminated = transport.sessionId === undefined;
  } finally {
    closing = true;
    window.__step = 'close';
    await Promise.race([client.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000))]);
  }
}

main()
  .catch((e) => {
    result.error = describe(e);
    if (!result.errorStep) result.errorStep = window.__step || 'load';
  })
  .finally(() => {
    window.__step = 'done';
    window.__result = result;
    console.log(`MCP_RESULT ${JSON.stringify(result)}`);
  });
