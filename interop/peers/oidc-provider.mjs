// Interop peer: a real OAuth 2.1 / OpenID Connect authorization server (node-oidc-provider 9)
// for the OAuth interop tests. In-memory, loopback only, http, no browser needed.
//
// usage: RESOURCE=http://127.0.0.1:9000/mcp PORT=0 node oidc-provider.mjs
//   (oidc-provider is installed by scripts/install-peers.sh into .peers/oidc. The script imports
//   `oidc-provider` normally, so a copy in .peers/oidc resolves it; run from interop/peers or from
//   a copy in .peers/node it falls back to .peers/oidc/node_modules, or to $OIDC_PROVIDER_MODULES.)
//
// Prints exactly one line to stdout when ready, `issuer http://127.0.0.1:PORT`, then serves
// until SIGTERM/SIGINT (exit 0). Everything else goes to stderr.
//
// env:
//   PORT              listen port on 127.0.0.1 (0 or unset: pick a free one)
//   RESOURCE          the MCP resource server URL (required); the only accepted resource
//                     indicator (RFC 8707); tokens for it are RS256 JWTs with aud = RESOURCE and
//                     scopes from `mcp:read mcp:write`; a request without `resource` defaults to
//                     it; any other resource -> invalid_target
//   M2M_SECRET        secret of client `m2m` (default m2m-secret)
//   INTROSPECT_SECRET secret of client `introspector` (default introspect-secret)
//   ACCESS_TTL        access token lifetime in seconds (default 3600)
//   DEBUG=oidc-provider:*  the library's own debug log (stderr)
//
// clients:
//   m2m          confidential, client_secret_basic or client_secret_post, client_credentials only
//   webapp       public (none), authorization_code + refresh_token, PKCE S256, redirect URIs
//                http://127.0.0.1:<any port>/callback and http://localhost:<any port>/callback
//                (application_type native: RFC 8252 7.3 loopback port matching, built in)
//   introspector confidential (basic or post), for the resource server's introspection calls
//   + open dynamic client registration at /reg (no initial access token)
//
// endpoints (issuer-relative): /auth /token /token/introspection /token/revocation /reg /jwks /me
//   /.well-known/openid-configuration and /.well-known/oauth-authorization-server (same JSON)
//   GET /interaction/:uid  headless consent: logs in `user-1`, grants everything requested, 303
//   POST /test/revoke-all  drops every grant, session, code and token (JWTs too), 204
//
// Notes:
// - node-oidc-provider refuses to introspect/revoke structured (JWT) access tokens, so this
//   script answers /token/introspection and /token/revocation itself when the token is a JWT:
//   client authentication (basic/post secret; public clients only for their own tokens),
//   RS256 signature, iss, exp, and a server-side record of issued JWT ids (so revocation and
//   /test/revoke-all make them inactive). Opaque tokens (refresh tokens) go to the library.
// - Headless clients without a cookie jar work too: when the interaction/resume cookie is
//   missing, it is reconstructed from the uid in the URL (test server only!), and the login
//   and consent steps are done in one interaction so no session cookie is needed.
// - Refresh tokens are issued to every client allowed the refresh_token grant (offline_access
//   not needed). The library rotates them for public clients: reusing a rotated one, or
//   redeeming an authorization code twice, revokes the whole grant; and a refresh that
//   fails (e.g. invalid_target) has already consumed the refresh token.
// - DPoP (RFC 9449) is on: a token request with a DPoP proof (ES256, Ed25519 or EdDSA) gets a
//   JWT access token with cnf.jkt and token_type DPoP (refresh tokens of public clients are
//   bound too); introspection then reports cnf and token_type DPoP. Nonces are not required.
// - Dynamically registered clients are "web" unless they register application_type "native":
//   web clients need an exact redirect_uri match, native ones get any-port loopback matching.
import * as crypto from "node:crypto";
import * as http from "node:http";
import * as path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";

// node-oidc-provider writes its NOTICEs with console.info (stdout): keep stdout for the ready line.
console.log = console.info = console.debug = (...args) => console.error(...args);
const log = (...args) => console.error("[oidc]", ...args);

async function loadProvider() {
  try {
    return await import("oidc-provider");
  } catch (first) {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const dirs = [
      process.env.OIDC_PROVIDER_MODULES,
      path.resolve(here, "../../.peers/oidc/node_modules"), // run from interop/peers
      path.resolve(here, "../oidc/node_modules"), // a copy in .peers/node (run-matrix.sh copies *.mjs there)
      path.resolve(here, "node_modules"),
    ].filter(Boolean);
    for (const dir of dirs) {
      try {
        return await import(pathToFileURL(path.join(dir, "oidc-provider/lib/index.js")).href);
      } catch {}
    }
    throw first;
  }
}
const { default: Provider, errors } = await loadProvider();

// ---------------------------------------------------------------- configuration from env
const RESOURCE = process.env.RESOURCE;
if (!RESOURCE || !URL.canParse(RESOURCE)) {
  log("RESOURCE must be set to the MCP resource server URL, e.g. http://127.0.0.1:9000/mcp");
  process.exit(2);
}
const RESOURCE_HREF = new URL(RESOURCE).href;
const RESOURCE_SCOPES = ["mcp:read", "mcp:write"];
const M2M_SECRET = process.env.M2M_SECRET || "m2m-secret";
const INTROSPECT_SECRET = process.env.INTROSPECT_SECRET || "introspect-secret";
const ACCESS_TTL = Number.parseInt(process.env.ACCESS_TTL || "3600", 10);
if (!(ACCESS_TTL > 0)) {
  log("ACCESS_TTL must be a positive number of seconds");
  process.exit(2);
}
const ACCOUNT = "user-1";
const OIDC_SCOPES = ["openid", "offline_access", ...RESOURCE_SCOPES];

const sameResource = (indicator) => URL.parse(indicator)?.href === RESOURCE_HREF;

// ---------------------------------------------------------------- in-memory adapter (resettable)
// One Map for all models: key "Model:id" -> { payload, expiresAt }. /test/revoke-all clears
// everything but dynamically registered clients.
const store = new Map();
const grantMembers = new Map(); // grantId -> Set of keys
const uidIndex = new Map(); // session uid -> session id
const userCodeIndex = new Map();

class Adapter {
  constructor(model) { this.model = model; }
  key(id) { return `${this.model}:${id}`; }
  async upsert(id, payload, expiresIn) {
    const key = this.key(id);
    store.set(key, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    if (payload.grantId) {
      if (!grantMembers.has(payload.grantId)) grantMembers.set(payload.grantId, new Set());
      grantMembers.get(payload.grantId).add(key);
    }
    if (this.model === "Session" && payload.uid) uidIndex.set(payload.uid, id);
    if (payload.userCode) userCodeIndex.set(payload.userCode, id);
  }
  async find(id) {
    const key = this.key(id);
    const entry = store.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      store.delete(key);
      return undefined;
    }
    return entry.payload;
  }
  async findByUid(uid) { const id = uidIndex.get(uid); return id ? this.find(id) : undefined; }
  async findByUserCode(code) { const id = userCodeIndex.get(code); return id ? this.find(id) : undefined; }
  async consume(id) {
    const entry = store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id) { store.delete(this.key(id)); }
  async revokeByGrantId(grantId) {
    for (const key of grantMembers.get(grantId) ?? []) store.delete(key);
    grantMembers.delete(grantId);
  }
}

// JWT access tokens are not stored by the library; remember their ids for introspection.
const issuedJwts = new Map(); // jti -> { grantId, expiresAt }
function revokeAll() {
  for (const key of [...store.keys()]) if (!key.startsWith("Client:")) store.delete(key);
  grantMembers.clear();
  uidIndex.clear();
  userCodeIndex.clear();
  issuedJwts.clear();
}

// ---------------------------------------------------------------- signing key (RS256)
const { privateKey } = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: crypto.randomUUID(), alg: "RS256", use: "sig" };
const publicKey = crypto.createPublicKey(privateKey);

// ---------------------------------------------------------------- HTTP server, then provider
let provider;
let providerCallback;
let issuer;
const server = http.createServer((req, res) => {
  handle(req, res).catch((err) => {
    log("handler error:", err?.stack || err);
    if (!res.headersSent) send(res, 500, { error: "server_error", error_description: String(err?.message || err) });
    else res.destroy();
  });
});
server.listen(Number.parseInt(process.env.PORT || "0", 10) || 0, "127.0.0.1", () => {
  const { port } = server.address();
  issuer = `http://127.0.0.1:${port}`;
  provider = makeProvider(issuer);
  providerCallback = provider.callback();
  process.stdout.write(`issuer ${issuer}\n`);
  log(`ready: issuer ${issuer}, resource ${RESOURCE}, access token ttl ${ACCESS_TTL}s`);
});
server.on("error", (err) => {
  log("listen failed:", err.message);
  process.exit(1);
});
function shutdown(signal) {
  log(`${signal}: shutting down`);
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 1000).unref();
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));

function makeProvider(issuer) {
  const configuration = {
    adapter: Adapter,
    jwks: { keys: [jwk] },
    clients: [
      {
        client_id: "m2m",
        client_secret: M2M_SECRET,
        grant_types: ["client_credentials"],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
      },
      {
        client_id: "webapp",
        application_type: "native", // loopback redirect URIs match on any port (RFC 8252 7.3)
        token_endpoint_auth_method: "none",
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        redirect_uris: ["http://127.0.0.1/callback", "http://localhost/callback"],
      },
      {
        client_id: "introspector",
        client_secret: INTROSPECT_SECRET,
        grant_types: [],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    // Static clients declare one token_endpoint_auth_method; accept both secret methods for them.
    clientAuthMethods: ["client_secret_basic", "client_secret_post", "none"],
    // mcp:* are also listed as scopes so that dynamic registrations carrying
    // `scope: "mcp:read mcp:write"` validate and discovery advertises them in scopes_supported.
    scopes: OIDC_SCOPES,
    responseTypes: ["code"], // OAuth 2.1: no implicit/hybrid
    // Dynamic registrations that omit grant_types get refresh tokens too.
    clientDefaults: {
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "client_secret_basic",
      id_token_signed_response_alg: "RS256",
    },
    claims: { openid: ["sub"] },
    findAccount: async (ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    pkce: { required: () => true }, // OAuth 2.1: PKCE (S256, the only method) for every code flow
    clientBasedCORS: () => true,
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: ACCESS_TTL,
      ClientCredentials: ACCESS_TTL,
      AuthorizationCode: 120,
      IdToken: 3600,
      RefreshToken: 14 * 24 * 3600,
      Interaction: 600,
      Session: 24 * 3600,
      Grant: 14 * 24 * 3600,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      // DPoP (RFC 9449): a token request with a DPoP proof gets a JWT bound to the proof's key
      // (cnf.jkt) and token_type DPoP; without a proof, a bearer token as before.
      dPoP: { enabled: true },
      registration: { enabled: true, initialAccessToken: false },
      resourceIndicators: {
        enabled: true,
        // No `resource` parameter: use the MCP server. With several granted: ask for one.
        defaultResource: async (ctx, client, oneOf) => {
          if (oneOf) return oneOf.length === 1 ? oneOf[0] : oneOf;
          return RESOURCE;
        },
        useGrantedResource: async () => true,
        getResourceServerInfo: async (ctx, indicator) => {
          if (!sameResource(indicator)) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          return {
            scope: RESOURCE_SCOPES.join(" "),
            audience: RESOURCE,
            accessTokenTTL: ACCESS_TTL,
            accessTokenFormat: "jwt",
            jwt: { sign: { alg: "RS256" } },
          };
        },
      },
    },
    interactions: { url: async (ctx, interaction) => `/interaction/${interaction.uid}` },
    renderError: async (ctx, out) => {
      ctx.type = "json";
      ctx.body = out;
    },
  };
  const p = new Provider(issuer, configuration);
  const remember = (token) => {
    log(`issued ${token.tokenType} access token (${token.format}) to ${token.clientId}${token.jkt ? `, cnf.jkt ${token.jkt}` : ""}`);
    if (token.format !== "jwt" || !token.jti) return;
    const exp = typeof token.exp === "number" ? token.exp * 1000 : Date.now() + ACCESS_TTL * 1000;
    issuedJwts.set(token.jti, { grantId: token.grantId, expiresAt: exp });
  };
  p.on("access_token.issued", remember);
  p.on("client_credentials.issued", remember);
  for (const event of ["server_error", "grant.error", "authorization.error", "introspection.error", "registration_create.error", "revocation.error"]) {
    p.on(event, (ctx, err) => log(event, err?.name, err?.message, err?.error_description ?? ""));
  }
  return p;
}

// ---------------------------------------------------------------- request routing
function send(res, status, body, headers = {}) {
  const text = body === undefined ? "" : JSON.stringify(body);
  res.writeHead(status, {
    ...(body === undefined ? {} : { "content-type": "application/json; charset=utf-8" }),
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readBody(req) {
  const chunks = [];
  let size = 0;
  for await (const chunk of req) {
    size += chunk.length;
    if (size > 64 * 1024) throw new Error("request body too large");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function addCookie(req, name, value) {
  const existing = req.headers.cookie;
  if (existing && existing.split(/;\s*/).some((c) => c.startsWith(`${name}=`))) return;
  req.headers.cookie = existing ? `${existing}; ${name}=${value}` : `${name}=${value}`;
}

async function handle(req, res) {
  if (!provider) return send(res, 503, { error: "temporarily_unavailable" });
  const url = new URL(req.url, issuer);
  const route = url.pathname;
  let m;

  if (route === "/test/revoke-all" && req.method === "POST") {
    revokeAll();
    log("revoke-all: dropped every grant, session and token");
    res.writeHead(204).end();
    return;
  }

  if (route === "/.well-known/oauth-authorization-server" && (req.method === "GET" || req.method === "HEAD")) {
    const upstream = await fetch(`${issuer}/.well-known/openid-configuration`);
    const text = await upstream.text();
    res.writeHead(upstream.status, {
      "content-type": "application/json; charset=utf-8",
      "access-control-allow-origin": "*",
      "content-length": Buffer.byteLength(text),
    });
    res.end(req.method === "HEAD" ? undefined : text);
    return;
  }

  if ((m = route.match(/^\/interaction\/([A-Za-z0-9_-]+)$/)) && req.method === "GET") {
    addCookie(req, provider.cookieName("interaction"), m[1]);
    return interaction(req, res);
  }

  if ((m = route.match(/^\/auth\/([A-Za-z0-9_-]+)$/))) {
    addCookie(req, provider.cookieName("resume"), m[1]);
  }

  if ((route === "/token/introspection" || route === "/token/revocation") && req.method === "POST") {
    const body = await readBody(req);
    const params = new URLSearchParams(body.toString("utf8"));
    const token = params.get("token");
    if (token && looksLikeJwt(token)) {
      return route === "/token/introspection"
        ? introspectJwt(req, res, params, token)
        : revokeJwt(req, res, params, token);
    }
    req.body = body; // the provider reads an already-consumed body from req.body
  }

  return providerCallback(req, res);
}

// ---------------------------------------------------------------- headless interaction
async function interaction(req, res) {
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (err) {
    return send(res, 400, { error: "invalid_request", error_description: `interaction: ${err.message}` });
  }
  const { prompt, params, grantId, session } = details;
  const accountId = session?.accountId ?? ACCOUNT;
  let grant = grantId ? await provider.Grant.find(grantId) : undefined;
  grant ??= new provider.Grant({ accountId, clientId: params.client_id });

  if (prompt.name === "login") {
    // Log in and consent in one step, so clients without a cookie jar need no session cookie.
    const requested = String(params.scope ?? "").split(" ").filter(Boolean);
    // mcp:* are configured scopes too (see `scopes` below), so they go in both places.
    const oidcScopes = requested.filter((s) => OIDC_SCOPES.includes(s));
    if (oidcScopes.length) grant.addOIDCScope(oidcScopes.join(" "));
    let resources = params.resource ?? RESOURCE;
    if (!Array.isArray(resources)) resources = [resources];
    const resourceScopes = requested.filter((s) => RESOURCE_SCOPES.includes(s));
    for (const indicator of resources) {
      grant.addResourceScope(indicator, resourceScopes.join(" "));
    }
    const result = { login: { accountId: ACCOUNT }, consent: { grantId: await grant.save() } };
    log(`interaction ${details.uid}: login ${ACCOUNT} + consent [${requested.join(" ")}] for ${resources.join(" ")}`);
    return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
  }

  if (prompt.name === "consent") {
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(" "));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, scopes.join(" "));
    }
    const result = { consent: { grantId: await grant.save() } };
    log(`interaction ${details.uid}: consent for ${params.client_id}`);
    return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
  }

  return provider.interactionFinished(
    req, res,
    { error: "access_denied", error_description: `unsupported prompt ${prompt.name}` },
    { mergeWithLastSubmission: false },
  );
}

// ---------------------------------------------------------------- JWT introspection/revocation
function looksLikeJwt(token) {
  const parts = token.split(".");
  if (parts.length !== 3) return false;
  try {
    return typeof JSON.parse(Buffer.from(parts[0], "base64url").toString("utf8")).alg === "string";
  } catch {
    return false;
  }
}

// RFC 6749 2.3.1 client authentication: HTTP Basic (form-urlencoded id/secret) or body params.
async function authenticateClient(req, params) {
  let id;
  let secret;
  const header = req.headers.authorization;
  if (header && /^basic /i.test(header)) {
    const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) return undefined;
    const dec = (s) => decodeURIComponent(s.replace(/\+/g, " "));
    id = dec(decoded.slice(0, colon));
    secret = dec(decoded.slice(colon + 1));
  } else {
    id = params.get("client_id") ?? undefined;
    secret = params.get("client_secret") ?? undefined;
  }
  if (!id) return undefined;
  const client = await provider.Client.find(id);
  if (!client) return undefined;
  if (client.clientSecret && client.clientAuthMethod !== "none") {
    if (secret === undefined) return undefined;
    const a = Buffer.from(String(secret));
    const b = Buffer.from(String(client.clientSecret));
    if (a.length !== b.length || !crypto.timingSafeEqual(a, b)) return undefined;
    return { client, confidential: true };
  }
  if (secret !== undefined) return undefined;
  return { client, confidential: false };
}

async function verifiedJwtClaims(token) {
  const [h, p, s] = token.split(".");
  let header;
  let payload;
  try {
    header = JSON.parse(Buffer.from(h, "base64url").toString("utf8"));
    payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));
  } catch {
    return undefined;
  }
  if (header.alg !== "RS256" || (header.kid && header.kid !== jwk.kid)) return undefined;
  const ok = crypto.verify("RSA-SHA256", Buffer.from(`${h}.${p}`), publicKey, Buffer.from(s, "base64url"));
  if (!ok) return undefined;
  if (payload.iss !== issuer) return undefined;
  if (typeof payload.exp !== "number" || payload.exp <= Math.floor(Date.now() / 1000)) return undefined;
  const record = issuedJwts.get(payload.jti);
  if (!record) return undefined; // revoked, or from an earlier run
  if (record.grantId && !(await provider.Grant.find(record.grantId))) return undefined;
  return payload;
}

const unauthorized = (res) =>
  send(res, 401, { error: "invalid_client", error_description: "client authentication failed" }, {
    "www-authenticate": 'Basic realm="oidc-provider"',
  });

async function introspectJwt(req, res, params, token) {
  const auth = await authenticateClient(req, params);
  if (!auth) return unauthorized(res);
  const claims = await verifiedJwtClaims(token);
  if (!claims || (!auth.confidential && claims.client_id !== auth.client.clientId)) {
    log(`introspection by ${auth.client.clientId}: inactive`);
    return send(res, 200, { active: false });
  }
  const bound = typeof claims.cnf?.jkt === "string";
  log(`introspection by ${auth.client.clientId}: active, ${bound ? "DPoP" : "Bearer"} token of ${claims.client_id}`);
  return send(res, 200, {
    active: true,
    client_id: claims.client_id,
    sub: claims.sub,
    aud: claims.aud,
    scope: claims.scope,
    exp: claims.exp,
    iat: claims.iat,
    iss: claims.iss,
    jti: claims.jti,
    ...(bound ? { cnf: { jkt: claims.cnf.jkt } } : {}),
    token_type: bound ? "DPoP" : "Bearer",
  });
}

async function revokeJwt(req, res, params, token) {
  const auth = await authenticateClient(req, params);
  if (!auth) return unauthorized(res);
  const claims = await verifiedJwtClaims(token);
  if (claims && claims.client_id === auth.client.clientId) issuedJwts.delete(claims.jti);
  res.writeHead(200, { "content-length": 0, "cache-control": "no-store" }).end();
}
