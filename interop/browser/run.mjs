#!/usr/bin/env node
// Browser interop harness: proves an MCP streamable-HTTP server can be used from a web page on
// another origin, with the official TypeScript client (@modelcontextprotocol/sdk 1.x) running in
// headless Chromium, and that a disallowed origin is refused.
//
//   node interop/browser/run.mjs --url http://127.0.0.1:PORT/mcp --origin-port N [--bad-origin-port M]
//        [--origin-host 127.0.0.1] [--bad-origin-host other-origin.test] [--timeout SECS (30)]
//        [--step-timeout SECS (10)] [--chromium PATH] [--verbose]
//
// The server under test must already run and allow the origin http://127.0.0.1:N (e.g.
// `mcpflow serve everything --http 127.0.0.1:PORT --allow-origin http://127.0.0.1:N`).
// The harness bundles page.mjs with esbuild, serves index.html + the bundle on port N (the
// allowed origin, http://127.0.0.1:N) and on port M (the disallowed origin), loads both in
// Chromium and reads each page's result. It prints one JSON line and exits 0 only when the
// allowed origin initialized, listed tools, saw progress and terminated its session, and the
// disallowed origin failed.
//
// The disallowed origin is http://other-origin.test:M by default: a name that is not a loopback
// name, which Chromium alone resolves to 127.0.0.1 (--host-resolver-rules; no DNS, nothing leaves
// the machine). A loopback page origin (http://127.0.0.1:M, http://localhost:M) is one a server
// may well allow by default (mcpflow allows pages served from its allowed hosts, the loopback
// names on any port); pass --bad-origin-host 127.0.0.1 or localhost to test a server that does not.
// Either origin host may be any such name; names other than 127.0.0.1/localhost are mapped.
//
// Besides the browser runs, the harness sends each origin's preflight itself (node:http OPTIONS,
// as Chromium would for the initialize POST) and reports the status and CORS headers it got,
// since a page cannot see a refused preflight's status.
// Exit codes: 0 pass, 1 a check failed (or a wait timed out), 2 usage, 3 harness error.
//
// Needs (scripts/install-peers.sh style): Node 22 and the SDK in .peers/node, playwright-core
// and esbuild in .peers/browser, and Debian's chromium at /usr/bin/chromium. Override the peers
// folder with MCPFLOW_PEERS and the browser with --chromium or CHROMIUM.
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const peers = process.env.MCPFLOW_PEERS || path.join(root, '.peers');
const started = Date.now();

function usage(msg) {
  if (msg) console.error(`run.mjs: ${msg}`);
  console.error(
    'usage: node interop/browser/run.mjs --url http://127.0.0.1:PORT/mcp --origin-port N [--bad-origin-port M]\n' +
      '       [--origin-host 127.0.0.1] [--bad-origin-host other-origin.test] [--timeout SECS (30)]\n' +
      '       [--step-timeout SECS (10)]\n' +
      '       [--chromium PATH (/usr/bin/chromium)] [--verbose]',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const o = {
    url: null,
    originPort: null,
    badOriginPort: 0,
    originHost: '127.0.0.1',
    badOriginHost: 'other-origin.test',
    timeoutMs: 30000,
    stepMs: 10000,
    chromium: process.env.CHROMIUM || '/usr/bin/chromium',
    verbose: false,
  };
  const port = (v, name) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0 || n > 65535) usage(`${name} wants a port number, got ${v}`);
    return n;
  };
  const secs = (v, name) => {
    const n = Number(v);
    if (!(n > 0)) usage(`${name} wants a positive number of seconds, got ${v}`);
    return Math.round(n * 1000);
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].startsWith('--') && argv[i].includes('=') ? argv[i].split(/=(.*)/s) : [argv[i], undefined];
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) usage(`${flag} wants a value`);
      return argv[++i];
    };
    switch (flag) {
      case '--url': o.url = value(); break;
      case '--origin-port': o.originPort = port(value(), flag); break;
      case '--bad-origin-port': o.badOriginPort = port(value(), flag); break;
      case '--origin-host': o.originHost = value().toLowerCase(); break;
      case '--bad-origin-host': o.badOriginHost = value().toLowerCase(); break;
      case '--timeout': o.timeoutMs = secs(value(), flag); break;
      case '--step-timeout': o.stepMs = secs(value(), flag); break;
      case '--chromium': o.chromium = value(); break;
      case '--verbose': case '-v': o.verbose = true; break;
      case '--help': case '-h': usage(); break;
      default: usage(`unknown argument ${argv[i]}`);
    }
  }
  if (!o.url) usage('--url is required');
  try {
    const u = new URL(o.url);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    usage(`--url is not an http(s) URL: ${o.url}`);
  }
  if (!o.originPort) usage('--origin-port is required (the server must allow the origin http://127.0.0.1:N)');
  for (const [flag, h] of [['--origin-host', o.originHost], ['--bad-origin-host', o.badOriginHost]]) {
    if (!/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/.test(h)) usage(`${flag} wants a host name or IPv4 address, got ${h}`);
  }
  if (o.badOriginPort && o.badOriginPort === o.originPort) usage('--bad-origin-port must differ from --origin-port');
  return o;
}

const opt = parseArgs(process.argv.slice(2));
const deadline = started + opt.timeoutMs;
const remaining = () => Math.max(0, deadline - Date.now());
const log = (...a) => { if (opt.verbose) console.error('[browser-harness]', ...a); };

class HarnessError extends Error {}

// Playwright's errors carry Chromium's whole log after the first line.
const firstLine = (e) => String(e?.message ?? e).split('\n')[0];

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new HarnessError(`timed out after ${ms} ms: ${what}`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

function peerRequire(dir) {
  const base = path.join(peers, dir, 'node_modules');
  if (!fs.existsSync(base)) {
    throw new HarnessError(`${base} is missing: install the browser peers (see scripts/install-peers.sh)`);
  }
  return createRequire(path.join(base, 'noop.js'));
}

function pkgVersion(dir, name) {
  try {
    return JSON.parse(fs.readFileSync(path.join(peers, dir, 'node_modules', name, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

// ---- the page bundle -------------------------------------------------------------------------

async function bundle(esbuild) {
  const out = await esbuild.build({
    entryPoints: [path.join(here, 'page.mjs')],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'chrome110',
    write: false,
    logLevel: 'silent',
    nodePaths: [path.join(peers, 'node', 'node_modules')],
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return out.outputFiles[0].contents;
}

// ---- the two static origins ------------------------------------------------------------------

function staticServer(port, files) {
  const server = http.createServer((req, res) => {
    const p = new URL(req.url, 'http://x').pathname;
    const f = files[p];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
    } else if (f) {
      res.writeHead(200, { 'Content-Type': f.type, 'Cache-Control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : f.body);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', (e) =>
      reject(new HarnessError(`cannot serve the page on 127.0.0.1:${port}: ${e.code || e.message}`)),
    );
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
}

function stopServer(server) {
  if (!server) return Promise.resolve();
  server.closeAllConnections?.();
  return new Promise((resolve) => server.close(() => resolve()));
}

// ---- one page run ----------------------------------------------------------------------------

const mcpUrl = new URL(opt.url);
const isMcpRequest = (u) => {
  try {
    const x = new URL(u);
    return x.origin === mcpUrl.origin && x.pathname === mcpUrl.pathname;
  } catch {
    return false;
  }
};

async function runPage(context, origin, waitMs) {
  const out = { origin };
  const requests = [];
  const byRequest = new Map();
  const corsConsole = [];
  const pageErrors = [];
  const sent = {};
  const page = await withTimeout(context.newPage(), Math.max(1000, Math.min(5000, waitMs)), 'opening a browser tab');
  page.on('console', (m) => {
    const t = m.text();
    if (/CORS|Access-Control|blocked by/i.test(t) && corsConsole.length < 4) corsConsole.push(t.slice(0, 400));
    if (opt.verbose && !t.startsWith('MCP_RESULT')) log(`${origin} console.${m.type()}: ${t}`);
  });
  // An error thrown outside the page's own try (e.g. the bundle failing to evaluate) means no
  // result will come: stop waiting at once.
  let pageCrashed;
  const crashed = new Promise((_, reject) => { pageCrashed = reject; });
  crashed.catch(() => {});
  page.on('pageerror', (e) => {
    if (pageErrors.length < 4) pageErrors.push(String(e).slice(0, 400));
    pageCrashed(new Error(`uncaught error in the page: ${firstLine(e)}`));
  });
  page.on('request', (r) => {
    if (!isMcpRequest(r.url())) return;
    const entry = { method: r.method(), status: null, failure: null };
    byRequest.set(r, entry);
    requests.push(entry);
    // The MCP-relevant request headers the client sent, merged per method (they decide the
    // preflight's Access-Control-Request-Headers, so the server's Allow-Headers must cover them).
    r.allHeaders()
      .then((h) => {
        const seen = (sent[r.method()] ??= {});
        for (const [k, v] of Object.entries(h)) {
          if (/^(mcp-|last-event-id$|content-type$|accept$|authorization$)/i.test(k)) {
            seen[k.toLowerCase()] = k.toLowerCase() === 'mcp-session-id' ? '<id>' : k.toLowerCase() === 'authorization' ? '<redacted>' : v;
          }
        }
      })
      .catch(() => {});
  });
  page.on('response', (r) => {
    const e = byRequest.get(r.request());
    if (e) e.status = r.status();
  });
  page.on('requestfailed', (r) => {
    const e = byRequest.get(r);
    if (e) e.failure = r.failure()?.errorText || 'failed';
  });

  const target = `${origin}/?url=${encodeURIComponent(opt.url)}&stepMs=${opt.stepMs}`;
  let phase = 'loading the page';
  try {
    const t0 = Date.now();
    await page.goto(target, { timeout: Math.max(1, waitMs), waitUntil: 'load' });
    phase = "waiting for the page's result";
    const res = await Promise.race([
      page.waitForFunction(() => window.__result, null, {
        timeout: Math.max(1, waitMs - (Date.now() - t0)),
        polling: 100,
      }),
      crashed,
    ]);
    Object.assign(out, await res.jsonValue());
    out.browserVersion = await withTimeout(
      context.newCDPSession(page).then((s) => s.send('Browser.getVersion')),
      2000,
      'asking Chromium its version',
    )
      .then((v) => v.product)
      .catch(() => null);
  } catch (e) {
    let at = null;
    try {
      at = await withTimeout(page.evaluate(() => window.__step ?? null), 2000, 'reading window.__step');
    } catch {}
    const timedOut = e?.name === 'TimeoutError' || /Timeout/i.test(String(e?.message));
    out.error = timedOut
      ? `harness timed out ${phase}${at ? ` (page step '${at}')` : ''} after ${waitMs} ms`
      : `harness: ${phase}: ${firstLine(e)}`;
    out.errorStep = at ?? phase;
    out.timedOut = timedOut;
    out.initialized ??= false;
    out.terminated ??= false;
  } finally {
    await withTimeout(page.close(), 3000, 'closing the tab').catch(() => {});
  }
  out.requests = requests.map((r) => `${r.method} ${r.status ?? '-'}${r.failure ? ` ${r.failure}` : ''}`);
  out.requestHeaders = Object.fromEntries(
    Object.entries(sent).map(([m, h]) => [m, Object.fromEntries(Object.entries(h).sort(([a], [b]) => a.localeCompare(b)))]),
  );
  if (corsConsole.length) out.corsConsole = corsConsole;
  if (pageErrors.length) out.pageErrors = pageErrors;
  return out;
}

// Page hosts that are not loopback literals are resolved to 127.0.0.1 by Chromium alone.
function resolverRules() {
  const names = [...new Set([opt.originHost, opt.badOriginHost])].filter((h) => !['127.0.0.1', 'localhost'].includes(h));
  return names.length ? [`--host-resolver-rules=${names.map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`] : [];
}

// The preflight Chromium sends before a POST within a session, sent from here, so the report
// shows what the server answered (a page cannot see a refused preflight's status or headers).
function directPreflight(origin, ms) {
  return new Promise((resolve) => {
    const req = http.request(
      mcpUrl,
      {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'content-type,mcp-protocol-version,mcp-session-id',
        },
        timeout: ms,
      },
      (res) => {
        res.resume();
        const h = res.headers;
        const out = { status: res.statusCode };
        for (const [k, name] of [
          ['access-control-allow-origin', 'allowOrigin'],
          ['access-control-allow-methods', 'allowMethods'],
          ['access-control-allow-headers', 'allowHeaders'],
          ['access-control-expose-headers', 'exposeHeaders'],
          ['access-control-max-age', 'maxAge'],
        ]) {
          if (h[k] !== undefined) out[name] = h[k];
        }
        resolve(out);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${ms} ms`)));
    req.on('error', (e) => resolve({ error: e.message }));
    req.end();
  });
}

// ---- main ------------------------------------------------------------------------------------

let servers = [];
let context = null;
let userDataDir = null;
let cleaning = null;

async function cleanup() {
  cleaning ??= (async () => {
    if (context) {
      await withTimeout(context.close(), 5000, 'closing Chromium').catch((e) => {
        console.error(`run.mjs: ${e.message}; Chromium is killed when this process exits`);
      });
      context = null;
    }
    await withTimeout(Promise.all(servers.map(stopServer)), 3000, 'stopping the static servers').catch(() => {});
    servers = [];
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  })();
  return cleaning;
}

// A last resort: whatever hangs, the process ends (Playwright kills its Chromium on exit).
const watchdog = setTimeout(() => {
  console.error(`run.mjs: overall time limit (${opt.timeoutMs} ms + 10 s grace) exceeded; exiting`);
  console.log(JSON.stringify({ ok: false, url: opt.url, error: 'harness watchdog fired' }));
  process.exit(3);
}, opt.timeoutMs + 10000);
watchdog.unref();

for (const ev of ['uncaughtException', 'unhandledRejection']) {
  process.on(ev, (e) => {
    if (stopping) return; // the signal handler is already ending the process
    console.error(`run.mjs: ${ev}: ${e?.stack || e}`);
    console.log(JSON.stringify({ ok: false, url: opt.url, error: `${ev}: ${firstLine(e)}` }));
    withTimeout(cleanup(), 5000, 'cleanup').catch(() => {}).finally(() => process.exit(3));
  });
}
let stopping = null;
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = sig;
    console.error(`run.mjs: ${sig}; closing Chromium and the static servers`);
    withTimeout(cleanup(), 5000, 'cleanup').catch(() => {}).finally(() => process.exit(130));
  });
}

async function main() {
  const browserReq = peerRequire('browser');
  peerRequire('node'); // checks the SDK's peers folder is there
  const versions = {
    sdk: pkgVersion('node', '@modelcontextprotocol/sdk'),
    playwrightCore: pkgVersion('browser', 'playwright-core'),
    esbuild: pkgVersion('browser', 'esbuild'),
    node: process.versions.node,
    chromium: null,
  };
  if (!fs.existsSync(opt.chromium)) {
    throw new HarnessError(`${opt.chromium} not found: apt-get install -y chromium (or pass --chromium)`);
  }

  // Both are CommonJS packages: require them from the peers folder.
  const esbuild = browserReq('esbuild');
  const { chromium } = browserReq('playwright-core');

  log('bundling page.mjs');
  const js = await withTimeout(bundle(esbuild), Math.min(remaining(), 20000), 'bundling page.mjs with esbuild').catch((e) => {
    throw e instanceof HarnessError ? e : new HarnessError(`bundling page.mjs failed: ${e.message}`);
  });
  log(`bundle is ${js.length} bytes`);
  const files = {
    '/': { type: 'text/html; charset=utf-8', body: fs.readFileSync(path.join(here, 'index.html')) },
    '/index.html': { type: 'text/html; charset=utf-8', body: fs.readFileSync(path.join(here, 'index.html')) },
    '/bundle.js': { type: 'text/javascript; charset=utf-8', body: js },
  };

  const good = await staticServer(opt.originPort, files);
  servers.push(good);
  const bad = await staticServer(opt.badOriginPort, files);
  servers.push(bad);
  const goodOrigin = `http://${opt.originHost}:${good.address().port}`;
  const badOrigin = `http://${opt.badOriginHost}:${bad.address().port}`;
  log(`allowed origin ${goodOrigin}, disallowed origin ${badOrigin}, server ${opt.url}`);

  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpflow-chromium-'));
  log(`launching ${opt.chromium}`);
  context = await withTimeout(
    chromium.launchPersistentContext(userDataDir, {
      executablePath: opt.chromium,
      headless: true,
      // This script owns the signals: it closes Chromium and the static servers itself.
      handleSIGINT: false,
      handleSIGTERM: false,
      handleSIGHUP: false,
      timeout: Math.max(1, Math.min(remaining(), 20000)),
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-dev-shm-usage',
        ...resolverRules(),
      ],
    }),
    Math.max(1, Math.min(remaining(), 25000)),
    `launching Chromium (${opt.chromium})`,
  ).catch((e) => {
    throw e instanceof HarnessError ? e : new HarnessError(`launching Chromium failed: ${firstLine(e)}`);
  });

  // Keep about a quarter of what is left (at least 4 s) for the disallowed origin's run.
  const reserve = Math.max(4000, Math.floor(remaining() / 4));
  const allowed = await runPage(context, goodOrigin, Math.max(1000, remaining() - reserve));
  log('allowed:', JSON.stringify(allowed));
  const disallowed = await runPage(context, badOrigin, Math.max(1000, remaining()));
  log('disallowed:', JSON.stringify(disallowed));
  const probeMs = Math.max(500, Math.min(3000, remaining()));
  [allowed.directPreflight, disallowed.directPreflight] = await Promise.all([
    directPreflight(goodOrigin, probeMs),
    directPreflight(badOrigin, probeMs),
  ]);
  versions.chromium = allowed.browserVersion || disallowed.browserVersion || null;
  delete allowed.browserVersion;
  delete disallowed.browserVersion;

  const failures = [];
  if (!allowed.initialized) failures.push(`allowed origin: not initialized (${allowed.error ?? 'no error'})`);
  else {
    if (!(allowed.tools > 0)) failures.push('allowed origin: listTools returned no tools');
    if (!(allowed.progress >= 1)) failures.push('allowed origin: no progress notifications');
    if (!allowed.terminated) failures.push(`allowed origin: session not terminated (${allowed.error ?? 'no error'})`);
    if (allowed.error) failures.push(`allowed origin: ${allowed.errorStep}: ${allowed.error}`);
  }
  // Refused: the page's client failed on its own (a CORS TypeError, or an HTTP error such as
  // the server's 403 when the server sends CORS headers with it); a timeout is no refusal.
  const refused =
    !disallowed.initialized && Boolean(disallowed.error) && !disallowed.timedOut && !/^harness/.test(disallowed.error);
  if (!refused) {
    failures.push(
      disallowed.initialized
        ? 'disallowed origin: initialized, but the server must refuse it'
        : `disallowed origin: no clean refusal (${disallowed.error ?? 'no error'})`,
    );
  }
  disallowed.refused = refused;
  const report = {
    ok: failures.length === 0,
    failures,
    url: opt.url,
    allowed,
    disallowed,
    versions,
    elapsedMs: Date.now() - started,
  };
  return report;
}

let code = 0;
try {
  const report = await main();
  await cleanup();
  console.log(JSON.stringify(report));
  for (const f of report.failures) console.error(`run.mjs: FAIL ${f}`);
  code = report.ok ? 0 : 1;
} catch (e) {
  await cleanup().catch(() => {});
  if (stopping) await new Promise(() => {}); // the signal handler exits
  const msg = e instanceof HarnessError ? e.message : e?.stack?.split('\n').filter((l, i) => i === 0 || /^\s+at /.test(l)).join('\n') || String(e);
  console.error(`run.mjs: ${msg}`);
  console.log(JSON.stringify({ ok: false, url: opt.url, error: firstLine(e) }));
  code = 3;
}
clearTimeout(watchdog);
process.exit(code);
