#!/usr/bin/env bash
# One `mcpflow serve --http` instance against three behind round robin, sharing a
# redis-server: `mcpflow-bench fleet` for each era and client count, printing one markdown
# table per run (calls/s, latency, errors, Redis commands per call). The instances, Redis
# and the load share this machine's cores, which every table names: on a small machine
# the figures show what the store costs per call, not what more instances add.
#
#   scripts/bench-fleet.sh                              # every cell
#   ERAS=handshake CLIENTS=100 scripts/bench-fleet.sh   # some of them
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
ERAS="${ERAS:-handshake 2026-07-28}"
CLIENTS="${CLIENTS:-100 1000}"
command -v redis-server >/dev/null || {
    echo "bench-fleet.sh: redis-server is missing (scripts/install-peers.sh installs it)" >&2
    exit 1
}
cargo build --release -q -j2 -p mcpflow-cli -p mcpflow-bench
bench="$root/target/release/mcpflow-bench"
mcpflow="$root/target/release/mcpflow"

for era in $ERAS; do
    for clients in $CLIENTS; do
        # 5,000 calls at 100 clients, 10,000 at 1,000.
        calls=$((clients >= 1000 ? 10 : 50))
        for shape in "--nodes 1" "--nodes 1 --redis" "--nodes 3 --redis"; do
            echo "### $era, $clients clients, $shape"
            # shellcheck disable=SC2086
            "$bench" fleet $shape --era "$era" --clients "$clients" --calls "$calls" --bin "$mcpflow"
            echo
        done
    done
done
