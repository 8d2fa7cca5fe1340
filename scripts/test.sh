#!/usr/bin/env bash
# Format check, lints and every test of the workspace. Exits non-zero on the first failure.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

echo "==> cargo fmt --all -- --check"
cargo fmt --all -- --check

echo "==> cargo clippy --workspace --all-targets -j2 -- -D warnings"
cargo clippy --workspace --all-targets -j2 -- -D warnings

echo "==> cargo test --workspace -j2"
cargo test --workspace -j2

echo "all checks passed"
