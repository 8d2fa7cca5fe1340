#!/usr/bin/env bash
# Format check, lints, every test of the workspace, docs, the publish checks, the README's
# getting-started crate built outside the workspace, the interop matrix against the official
# Python and TypeScript SDKs, and the official MCP conformance suite. Exits non-zero on the
# first failure.
#
# On 2 cores the steps overlap where one mostly waits: the peers (Python venvs, npm
# packages) install while clippy runs; the interop matrix runs while the tests run; the
# conformance suite runs while the feature matrix and the public API build. Every build
# shares one target directory, so each reuses the dependencies that an earlier one built
# with the same features. A background step's output is printed whole when it ends.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step's header carries the seconds elapsed so far, and the machine's busy and idle
# CPU seconds since the start (from /proc/stat), so a slow step shows in the log and so
# does whether it had the cores to itself.
cpu() { awk -v hz="$(getconf CLK_TCK)" '/^cpu /{printf "%d %d\n", ($2+$3+$4+$7+$8)/hz, ($5+$6)/hz}' /proc/stat; }
read -r busy0 idle0 < <(cpu)
step() {
    local busy idle
    read -r busy idle < <(cpu)
    echo "==> [${SECONDS}s, cpu busy $((busy - busy0))s idle $((idle - idle0))s] $*"
}
logs="$(mktemp -d -t mcpflow-test.XXXXXX)"
# A background step's end: its output, then its status.
finish() { # pid log what
    local status=0
    wait "$1" || status=$?
    cat "$2"
    if [[ "$status" != 0 ]]; then
        echo "FAIL $3 (exit $status; log: $2)" >&2
        exit 1
    fi
}
# Every crate, the benchmark harness's own tests included, and the features off by default
# (the JWT verifier, DPoP and private_key_jwt, the Redis bus, OpenTelemetry; the CLI turns
# them on too).
tests=(cargo test --workspace -j2 --features mcpflow/jwt,mcpflow/oauth-jwt,mcpflow/redis,mcpflow/otel)

# A full disk shows up much later as a linker killed by SIGBUS; say it up front instead.
need_gib=6
free_gib=$(df -Pk . | awk 'NR == 2 {print int($4 / 1048576)}')
if (( free_gib < need_gib )); then
    echo "warning: ${free_gib} GiB free here; the build and the peers take about ${need_gib} GiB," \
        "and a full disk fails the link with 'Bus error'" >&2
fi

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "scripts/install-peers.sh, in the background (pinned Python and TypeScript SDK peers into .peers/)"
./scripts/install-peers.sh >"$logs/peers.log" 2>&1 &
peers=$!

# Every feature, so that the code behind the optional ones is linted too, and so that the
# docs below find their dependencies checked with the same features.
step "cargo clippy --workspace --all-targets --all-features -j2 -- -D warnings"
cargo clippy --workspace --all-targets --all-features -j2 -- -D warnings

step "${tests[*]} --no-run (the build)"
"${tests[@]}" --no-run

# The test build made the mcpflow command and the examples, with every feature: the scripts
# below use them as they are.
export MCPFLOW_PREBUILT=1

# The tests and the interop matrix use redis-server, which the peers' installation brings.
step "the peers' installation"
finish "$peers" "$logs/peers.log" "scripts/install-peers.sh"

# Each cell waits on its peers far more than it computes. Cargo holds no lock while tests
# run, so the matrix's own `cargo test` cells find the build done and start at once.
step "interop matrix over stdio and streamable HTTP, in the background"
INTEROP_CONTROLS="${INTEROP_CONTROLS:-0}" ./interop/run-matrix.sh >"$logs/interop.log" 2>&1 &
interop=$!

step "${tests[*]}"
"${tests[@]}"

# With every feature, reusing the dependencies clippy checked.
step "the docs, warnings (broken links included) as errors (scripts/release-check.sh docs)"
./scripts/release-check.sh docs

step "MCP conformance suite over streamable HTTP (server and client suites), in the background"
./scripts/conformance.sh >"$logs/conformance.log" 2>&1 &
conformance=$!

# The public API's rustdoc JSON documents what the docs did, so it finds the same
# dependencies checked.
step "rust-version, every feature of mcpflow alone, the public API (scripts/release-check.sh versions features api)"
./scripts/release-check.sh versions features api

step "interop matrix results"
finish "$interop" "$logs/interop.log" "interop/run-matrix.sh"

step "MCP conformance suite results"
finish "$conformance" "$logs/conformance.log" "scripts/conformance.sh"

# Both build in this target directory, reusing the dependencies built above, and the dry
# run replaces the test build's `mcpflow` command, which the suites above run: so last.
step "the publish dry run (scripts/release-check.sh package), then the README's crate (scripts/fresh-crate.sh)"
./scripts/release-check.sh package
./scripts/fresh-crate.sh

step "all checks passed"
