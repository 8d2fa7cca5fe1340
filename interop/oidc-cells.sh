# shellcheck shell=bash
# OAuth against a real authorization server: node-oidc-provider (interop/peers/oidc-provider.mjs,
# installed by scripts/install-peers.sh into .peers/oidc) issues the tokens, a protected
# `mcpflow serve everything --http` checks them, and a client signs in:
#   - the mcpflow client with client credentials (client `m2m`), tokens checked as JWTs (JWKS);
#   - the mcpflow client with the authorization code flow (dynamic registration, PKCE, a
#     headless `$BROWSER` following the redirects with curl), tokens checked by introspection;
#   - the Python mcp 2.x client's own OAuth flow (interop/peers/oauth_client.py --follow);
#   - the mcpflow client against a server requiring DPoP-bound tokens (RFC 9449) and nonces.
# Each cell starts its own authorization server and protected server: the server's port is
# picked first, since the authorization server issues tokens for that URL (RESOURCE) and the
# server names the issuer. Every wait is bounded; both are stopped after the cell.
# Sourced by interop/run-matrix.sh after its OAuth section: uses its `report`, `free_port`,
# `stop_http` (and `http_pid`/`http_url`), `$root`, `$peers`, `$mcpflow`, `$node`, `$py2`,
# `$logs` and `$T`.

oidc_pid=""
oidc_issuer=""
oidc_start_error=""
oidc_start_log=""
stop_oidc() {
    if [[ -n "$oidc_pid" ]]; then
        kill "$oidc_pid" 2>/dev/null
        wait "$oidc_pid" 2>/dev/null
        oidc_pid=""
    fi
}
trap 'stop_http; stop_oidc' EXIT
trap 'stop_http; stop_oidc; exit 130' INT TERM

# Secrets of the static clients, for this run only; the server and the client read theirs
# from the environment (--auth-client-secret-env, --client-secret-env).
oidc_m2m_secret="m2m-$RANDOM$RANDOM$RANDOM"
oidc_introspect_secret="introspect-$RANDOM$RANDOM$RANDOM"

# The headless browser of the authorization-code cells: the sign-in is a chain of redirects
# (authorize, interaction, resume) that ends at mcpflow's loopback callback.
oidc_browser="$logs/oidc-browser.sh"
printf '#!/bin/sh\nexec curl -sS -L --max-time 10 -o /dev/null "$1"\n' >"$oidc_browser"
chmod +x "$oidc_browser"

start_oidc_pair() { # file-prefix command-words... (@PORT@ and @ISSUER@ in a word are replaced)
    # Starts the authorization server for http://127.0.0.1:PORT/mcp, then the server command on
    # PORT; sets oidc_issuer, http_pid and http_url. Logs: PREFIX.oidc.log, PREFIX.server.log.
    # On failure, oidc_start_error says which did not start and oidc_start_log is its log.
    local f="$1" attempt i port word
    shift
    local words=()
    for attempt in 1 2 3; do # a fresh port if the server exits (another process took the port)
        port="$(free_port)"
        : >"$f.oidc.out"
        RESOURCE="http://127.0.0.1:$port/mcp" PORT=0 M2M_SECRET="$oidc_m2m_secret" \
            INTROSPECT_SECRET="$oidc_introspect_secret" OIDC_PROVIDER_MODULES="$peers/oidc/node_modules" \
            timeout 120 "$node" "$root/interop/peers/oidc-provider.mjs" </dev/null >"$f.oidc.out" 2>"$f.oidc.log" &
        oidc_pid=$!
        oidc_issuer=""
        for ((i = 0; i < 100; i++)); do
            oidc_issuer="$(sed -n 's/^issuer //p' "$f.oidc.out")"
            [[ -n "$oidc_issuer" ]] && break
            kill -0 "$oidc_pid" 2>/dev/null || break
            sleep 0.1
        done
        if [[ -z "$oidc_issuer" ]]; then
            oidc_start_error="the authorization server exited or printed no issuer within 10 s"
            oidc_start_log="$f.oidc.log"
            stop_oidc
            return 1
        fi
        words=()
        for word in "$@"; do
            word="${word//@PORT@/$port}"
            words+=("${word//@ISSUER@/$oidc_issuer}")
        done
        : >"$f.server.log"
        OIDC_INTROSPECT_SECRET="$oidc_introspect_secret" timeout 120 "${words[@]}" </dev/null >>"$f.server.log" 2>&1 &
        http_pid=$!
        for ((i = 0; i < 100; i++)); do
            kill -0 "$http_pid" 2>/dev/null || break
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                http_url="http://127.0.0.1:$port/mcp"
                return 0
            fi
            sleep 0.1
        done
        oidc_start_error="the server did not accept connections within 10 s"
        oidc_start_log="$f.server.log"
        # Still running but not listening after 10 s: give up. Exited: maybe the port was taken.
        kill -0 "$http_pid" 2>/dev/null && { stop_http; stop_oidc; return 1; }
        stop_http
        stop_oidc
    done
    return 1
}

oidc_server=("$mcpflow" serve everything --http 127.0.0.1:@PORT@ --auth-issuer @ISSUER@ --auth-scope mcp:read)
oidc_jwks=(--auth-jwks @ISSUER@/jwks)
oidc_introspect=(--auth-introspect @ISSUER@/token/introspection --auth-client-id introspector
    --auth-client-secret-env OIDC_INTROSPECT_SECRET)
OIDC_TOOL_TEXT="This is a simple text response for testing."

oidc_call() { # file-prefix call-args... ; mcpflow calls test_simple_text at $http_url
    local f="$1" auth_dir
    shift
    auth_dir="$(mktemp -d "$f.auth.XXXXXX")" # no tokens or registrations from another cell
    MCPFLOW_AUTH_DIR="$auth_dir" BROWSER="$oidc_browser" OIDC_M2M_SECRET="$oidc_m2m_secret" \
        $T "$mcpflow" call test_simple_text --url "$http_url" --scope mcp:read --auth-timeout 30 "$@" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
}

oidc_verdict() { # file-prefix what ; PASS when the call exited 0 with the tool's text
    local f="$1" what="$2" rc
    rc="$(cat "$f.rc")"
    if [[ $rc == 0 ]] && grep -qF "$OIDC_TOOL_TEXT" "$f.out"; then
        echo "PASS $what"
    else
        echo "FAIL exit $rc: $(tr '\n' ' ' <"$f.err" | tail -c 300 | sed 's/ *$//') (authorization server log $f.oidc.log)"
    fi
}

# node-oidc-provider logs each access token it issues: `issued Bearer|DPoP access token (jwt) to CLIENT`.
oidc_issued() { # file-prefix Bearer|DPoP client-pattern
    grep -qE "\[oidc\] issued $2 access token \(jwt\) to $3" "$1.oidc.log"
}

oidc_names=(
    "mcpflow(http, JWT from node-oidc-provider) <- mcpflow client credentials"
    "mcpflow(http, introspection at node-oidc-provider) <- mcpflow authorization code (headless browser)"
    "mcpflow(http, JWT from node-oidc-provider) <- python mcp 2.x OAuth"
    "mcpflow(http, DPoP required + nonce, JWT from node-oidc-provider) <- mcpflow authorization code"
)
oidc_missing=""
[[ -f "$peers/oidc/node_modules/oidc-provider/package.json" ]] ||
    oidc_missing="oidc-provider is not installed in $peers/oidc (scripts/install-peers.sh)"
mcpflow_has --auth-dpop-nonce serve everything && mcpflow_has --grant call ||
    oidc_missing="\`mcpflow serve everything --help\` lists no --auth-dpop-nonce or \`mcpflow call --help\` no --grant"
if [[ -n "$oidc_missing" ]]; then
    for name in "${oidc_names[@]}"; do
        report "$name" "FAIL $oidc_missing"
    done
else
    # a. Client credentials; the server checks the JWT's signature against the provider's JWKS.
    name="${oidc_names[0]}"
    f="$logs/oidc.client-credentials"
    if start_oidc_pair "$f" "${oidc_server[@]}" "${oidc_jwks[@]}"; then
        oidc_call "$f" --grant client-credentials --client-id m2m --client-secret-env OIDC_M2M_SECRET
        stop_http
        stop_oidc
        verdict="$(oidc_verdict "$f" "client_credentials for m2m, an RS256 JWT checked against the JWKS")"
        if [[ $verdict == PASS* ]] && ! oidc_issued "$f" Bearer m2m; then
            verdict="FAIL the call passed, but the authorization server logged no JWT issued to m2m"
        fi
        report "$name" "$verdict" "$f.server.log"
    else
        report "$name" "FAIL $oidc_start_error" "$oidc_start_log"
    fi

    # b. Authorization code with dynamic registration; the server introspects every token.
    name="${oidc_names[1]}"
    f="$logs/oidc.authorization-code"
    if start_oidc_pair "$f" "${oidc_server[@]}" "${oidc_introspect[@]}"; then
        oidc_call "$f"
        stop_http
        stop_oidc
        verdict="$(oidc_verdict "$f" "dynamic registration, authorization code with PKCE, the token introspected by the server")"
        if [[ $verdict == PASS* ]] && ! grep -q '\[oidc\] introspection by introspector: active' "$f.oidc.log"; then
            verdict="FAIL the call passed, but the authorization server logged no introspection by the server"
        fi
        report "$name" "$verdict" "$f.server.log"
    else
        report "$name" "FAIL $oidc_start_error" "$oidc_start_log"
    fi

    # c. The official Python client's OAuth flow (discovery, dynamic registration as a native
    # client, PKCE); its redirect handler follows the provider's redirects with a cookie jar.
    name="${oidc_names[2]}"
    f="$logs/oidc.python"
    if start_oidc_pair "$f" "${oidc_server[@]}" "${oidc_jwks[@]}"; then
        $T "$py2" "$root/interop/peers/oauth_client.py" --follow --tools test_simple_text "$http_url" >"$f.out" 2>"$f.err"
        echo $? >"$f.rc"
        stop_http
        stop_oidc
        verdict="$(python3 - "$f.out" "$(cat "$f.rc")" "$OIDC_TOOL_TEXT" <<'PY'
import json, sys
path, rc, text = sys.argv[1:]
lines = [l for l in open(path, errors="replace").read().splitlines() if l.startswith("{")]
try:
    out = json.loads(lines[-1])
except Exception:
    print(f"FAIL no JSON line from oauth_client.py (exit {rc})")
    sys.exit()
if rc != "0" or not out.get("ok") or out.get("test_simple_text") != text:
    print(f"FAIL exit {rc}: {str(out.get('error', out))[:300]}")
else:
    print(f"PASS proto {out.get('protocolVersion')}, {out['redirects']} authorization, redirects {out.get('hops')}")
PY
)"
        report "$name" "$verdict" "$f.server.log"
    else
        report "$name" "FAIL $oidc_start_error" "$oidc_start_log"
    fi

    # d. DPoP: the server takes only DPoP-bound tokens and hands out nonces; the mcpflow client
    # binds the token to its key at the token endpoint (cnf.jkt in the JWT) and proves it.
    name="${oidc_names[3]}"
    f="$logs/oidc.dpop"
    if start_oidc_pair "$f" "${oidc_server[@]}" "${oidc_jwks[@]}" --auth-dpop required --auth-dpop-nonce; then
        oidc_call "$f"
        stop_http
        stop_oidc
        verdict="$(oidc_verdict "$f" "a DPoP-bound JWT (cnf.jkt), proofs with the server's nonce")"
        if [[ $verdict == PASS* ]] && ! oidc_issued "$f" DPoP '[^ ]+, cnf\.jkt '; then
            verdict="FAIL the call passed, but the authorization server logged no DPoP-bound token"
        fi
        report "$name" "$verdict" "$f.server.log"
    else
        report "$name" "FAIL $oidc_start_error" "$oidc_start_log"
    fi
fi
