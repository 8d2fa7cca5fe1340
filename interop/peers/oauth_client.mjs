// Interop peer: the TypeScript SDK (v2) client's OAuth flow against a protected MCP server.
//
// usage: node oauth_client.mjs URL   (run from .peers/node, where its packages are)
//
// Connects with an OAuthClientProvider (discovery from the 401, dynamic registration,
// authorization code with PKCE). The "user" is this script: redirectToAuthorization fetches
// the authorization URL itself, expects the test authorization server to approve at once
// with a 302, and keeps the code and iss of the Location header; after the SDK's
// UnauthorizedError the script calls transport.finishAuth and tries again. Then it calls
// `whoami` and `admin` (the latter needs a scope step-up on 403) and prints one JSON line.
import { Client, StreamableHTTPClientTransport, UnauthorizedError } from "@modelcontextprotocol/client";

const url = new URL(process.argv[2]);
const REDIRECT = "http://127.0.0.1:9/callback"; // never connected to: the script reads the Location
const out = { client: "typescript-mcp-oauth", redirects: 0 };
let pending = null;

const store = { tokens: undefined, client: undefined, verifier: undefined };
const provider = {
  get redirectUrl() { return REDIRECT; },
  get clientMetadata() {
    return {
      client_name: "mcpflow interop (typescript)",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  clientInformation() { return store.client; },
  saveClientInformation(info) { store.client = info; },
  tokens() { return store.tokens; },
  saveTokens(tokens) { store.tokens = tokens; },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
  async redirectToAuthorization(authorizationUrl) {
    out.redirects += 1;
    (out.authorize_scopes ??= []).push(authorizationUrl.searchParams.get("scope"));
    const response = await fetch(authorizationUrl, { redirect: "manual", signal: AbortSignal.timeout(10000) });
    if (response.status !== 302) throw new Error(`authorization answered ${response.status}`);
    pending = new URL(response.headers.get("location")).searchParams;
  },
};

function isUnauthorized(e) {
  return e instanceof UnauthorizedError || e?.name === "UnauthorizedError";
}

async function main() {
  let transport;
  let client;
  const connect = async () => {
    transport = new StreamableHTTPClientTransport(url, { authProvider: provider });
    client = new Client({ name: "mcpflow-interop-oauth", version: "1.0.0" });
    await client.connect(transport);
  };
  // Run `step`; on UnauthorizedError, finish the authorization the provider started and
  // run `retry` (a bounded number of times).
  const authorized = async (step, retry) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await (attempt === 0 ? step() : retry());
      } catch (e) {
        if (!isUnauthorized(e) || !pending || attempt >= 3) throw e;
        const params = pending;
        pending = null;
        await transport.finishAuth(params);
      }
    }
  };
  await authorized(connect, connect);
  out.protocolVersion = transport.protocolVersion ?? null;
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name);
  for (const name of ["whoami", "admin"]) {
    const call = () => client.callTool({ name, arguments: {} });
    const result = await authorized(call, call);
    out[name] = result.content.map((c) => c.text ?? "").join("");
  }
  await client.close();
}

const timer = setTimeout(() => {
  out.ok = false;
  out.error = "timed out after 40 s";
  console.log(JSON.stringify(out));
  process.exit(1);
}, 40000);
try {
  await main();
  out.ok = true;
} catch (e) {
  out.ok = false;
  out.error = `${e?.name}: ${e?.message}`;
}
clearTimeout(timer);
console.log(JSON.stringify(out));
process.exit(out.ok ? 0 : 1);
