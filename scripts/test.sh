#!/usr/bin/env bash
# Format check, lints, every test of the workspace, docs, the publish checks, the README's
# getting-started crate built outside the workspace, the interop matrix against the official
# Python and TypeScript SDKs, and the official MCP conformance suite. Exits non-zero on the
# first failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Each step's header carries the seconds elapsed so far, so a slow step shows in the log.
step() { echo "==> [${SECONDS}s] $*"; }

step "cargo fmt --all -- --check"
cargo fmt --all -- --check

step "cargo clippy --workspace --all-targets -j2 -- -D warnings"
cargo clippy --workspace --all-targets -j2 -- -D warnings

step "cargo test -j2 (default members: all but mcpflow-bench)"
cargo test -j2

step "cargo test -p mcpflow --features jwt,oauth-jwt --test auth -j2 (the JWT verifier, DPoP and private_key_jwt, off by default)"
cargo test -p mcpflow --features jwt,oauth-jwt --test auth -j2

step "cargo test -p mcpflow-bench --bins -j2 (the harness's own tests: its request layouts)"
cargo test -p mcpflow-bench --bins -j2

step "cargo doc --workspace --all-features --no-deps (warnings, broken links included, are errors)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps -j2

step "ready to publish: rust-version, feature matrix, publish dry-run, public API (scripts/release-check.sh)"
./scripts/release-check.sh

step "the README's getting-started crate, outside the workspace (scripts/fresh-crate.sh)"
./scripts/fresh-crate.sh

step "interop matrix over stdio and streamable HTTP (installs pinned Python and TypeScript SDK peers into .peers/)"
./scripts/install-peers.sh
INTEROP_CONTROLS="${INTEROP_CONTROLS:-0}" ./interop/run-matrix.sh

step "MCP conformance suite over streamable HTTP (server and client suites)"
./scripts/conformance.sh

echo "all checks passed in ${SECONDS}s"
