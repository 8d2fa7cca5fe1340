#!/usr/bin/env bash
# Format check, lints, every test of the workspace, docs, the publish checks, the README's
# getting-started crate built outside the workspace, the interop matrix against the official
# Python and TypeScript SDKs, and the official MCP conformance suite. Exits non-zero on the
# first failure.
#
# Two steps wait on other processes more than they compute, so they overlap a step that
# computes: the peers (Python venvs, npm packages) install while clippy runs, and the
# interop matrix runs while the publish checks build. Their output is printed whole when
# they end.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step's header carries the seconds elapsed so far, so a slow step shows in the log.
step() { echo "==> [${SECONDS}s] $*"; }
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

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "scripts/install-peers.sh, in the background (pinned Python and TypeScript SDK peers into .peers/)"
./scripts/install-peers.sh >"$logs/peers.log" 2>&1 &
peers=$!

step "cargo clippy --workspace --all-targets -j2 -- -D warnings"
cargo clippy --workspace --all-targets -j2 -- -D warnings

# Every crate, the benchmark harness's own tests included, and the features off by default
# (the JWT verifier, DPoP and private_key_jwt; the CLI turns them on too).
step "cargo test --workspace -j2 --features mcpflow/jwt,mcpflow/oauth-jwt"
cargo test --workspace -j2 --features mcpflow/jwt,mcpflow/oauth-jwt

step "cargo doc --workspace --all-features --no-deps (warnings, broken links included, are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps -j2

step "the peers' installation"
finish "$peers" "$logs/peers.log" "scripts/install-peers.sh"

# The test build made the mcpflow command and the examples, with every feature: the scripts
# below use them as they are.
export MCPFLOW_PREBUILT=1

step "interop matrix over stdio and streamable HTTP, in the background"
INTEROP_CONTROLS="${INTEROP_CONTROLS:-0}" ./interop/run-matrix.sh \
    >"$logs/interop.log" 2>&1 &
interop=$!

step "ready to publish: rust-version, feature matrix, publish dry-run, public API (scripts/release-check.sh)"
./scripts/release-check.sh

step "the README's getting-started crate, outside the workspace (scripts/fresh-crate.sh)"
./scripts/fresh-crate.sh

step "interop matrix results"
finish "$interop" "$logs/interop.log" "interop/run-matrix.sh"

step "MCP conformance suite over streamable HTTP (server and client suites)"
./scripts/conformance.sh

echo "all checks passed in ${SECONDS}s"
