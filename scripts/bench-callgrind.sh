#!/usr/bin/env bash
# Instructions per call of a few mcpflow-bench cells, counted by callgrind: unlike wall
# time on a shared machine, the count does not move with the load.
#
#   memory <workload> <system>  the whole cell process (client and server);
#   http <workload> <system>    the server process only (the client runs natively).
#
# Each cell runs at CALLS and 2×CALLS calls; (instructions at 2×CALLS - instructions at
# CALLS) / CALLS leaves out startup, connecting and closing.
#
#   scripts/bench-callgrind.sh              # this tree
#   scripts/bench-callgrind.sh ../wt-before # another tree (worktree) with this harness
#   scripts/bench-callgrind.sh d33fc08      # a commit, in a worktree under $TMPDIR; when
#                                           # its harness lacks mcpflow-2026, this HEAD's
#   CALLS=1000 CELLS="http:w1:mcpflow-2026" scripts/bench-callgrind.sh
#   FEATURES=mcpflow/otel scripts/bench-callgrind.sh   # with these cargo features on
#
# The callgrind files stay in $OUT (callgrind_annotate reads them).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CALLS="${CALLS:-2000}"
CELLS="${CELLS:-memory:w2:baseline memory:w2:mcpflow memory:w2:mcpflow-2026 http:w1:baseline http:w1:mcpflow http:w1:mcpflow-2026}"
target="${1:-$root}"

if [[ -d "$target" ]]; then
    tree="$(cd "$target" && pwd)"
else
    rev="$(git -C "$root" rev-parse --short "$target^{commit}")"
    tree="${TMPDIR:-/tmp}/mcpflow-callgrind-$rev"
    [[ -d "$tree" ]] || git -C "$root" worktree add -q --detach "$tree" "$rev"
    if ! grep -q mcpflow-2026 "$tree/crates/mcpflow-bench/src/main.rs"; then
        echo "$rev's harness has no mcpflow-2026: using $(git -C "$root" rev-parse --short HEAD)'s" >&2
        git -C "$tree" checkout -q "$(git -C "$root" rev-parse HEAD)" -- crates/mcpflow-bench
    fi
fi
OUT="${OUT:-${TMPDIR:-/tmp}/mcpflow-callgrind-out/$(basename "$tree")}"
mkdir -p "$OUT"

(cd "$tree" && cargo build --profile profiling -q -j2 -p mcpflow-bench ${FEATURES:+--features "$FEATURES"})
bench="${CARGO_TARGET_DIR:-$tree/target}/profiling/mcpflow-bench"
callgrind() { echo "valgrind --tool=callgrind --quiet --callgrind-out-file=$1"; }
instructions() { awk '/^(summary|totals):/ { print $2; exit }' "$1"; }

run() { # transport workload system calls -> instructions
    local file="$OUT/$1-$2-$3-$4.callgrind" line
    rm -f "$file"
    if [[ "$1" == memory ]]; then
        line=$($(callgrind "$file") "$bench" cell --system "$3" --transport "$1" \
            --workload "$2" --calls "$4")
    else
        line=$(MCPFLOW_BENCH_SERVE_UNDER="$(callgrind "$file")" "$bench" cell --system "$3" \
            --transport "$1" --workload "$2" --calls "$4")
    fi
    if grep -q '"error":"' <<<"$line" || [[ ! -s "$file" ]]; then
        echo "$1 $2 $3 at $4 calls failed: $line" >&2
        return 1
    fi
    instructions "$file"
}

echo "tree $tree at $(git -C "$tree" rev-parse --short HEAD)$(git -C "$tree" diff --quiet HEAD || echo ' (modified)')${FEATURES:+ with $FEATURES}, $CALLS and $((2 * CALLS)) calls a cell"
echo
echo "| cell | counted | instructions at $CALLS | at $((2 * CALLS)) | per call |"
echo "|---|---|---:|---:|---:|"
for cell in $CELLS; do
    IFS=: read -r transport workload system <<<"$cell"
    one=$(run "$transport" "$workload" "$system" "$CALLS")
    two=$(run "$transport" "$workload" "$system" "$((2 * CALLS))")
    counted=$([[ "$transport" == memory ]] && echo "client + server" || echo "server")
    printf '| %s %s %s | %s | %s | %s | %s |\n' "$transport" "$workload" "$system" "$counted" \
        "$one" "$two" "$(((two - one) / CALLS))"
done
