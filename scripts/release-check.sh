#!/usr/bin/env bash
# Checks that the crates are ready to publish:
#   1. rust-version: no locked dependency of a published crate needs a newer Rust;
#   2. every feature of mcpflow builds alone, and with none (all together is the
#      workspace's own build), without a warning;
#   3. `cargo publish --workspace --dry-run`: each crate packages and builds from its
#      package alone, against the others as packaged, without a warning;
#   4. the docs, every feature on, build without a warning (broken links included);
#   5. the public API of the library crates, every feature on, equals the listing in
#      docs/public-api/ (scripts/api-listing, the `public-api` library that
#      cargo-public-api prints with): a change to the API shows as a diff of that listing.
#      `MCPFLOW_BLESS_API=1 scripts/release-check.sh` writes the new listing.
# Arguments name the parts to run (`versions`, `features`, `package`, `docs`, `api`), in
# order; without any, all five. `docs` and `api` reuse the dependencies that clippy checked
# with every feature, where scripts/test.sh ran it first. The one tool,
# scripts/api-listing, builds from its own lockfile.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"

# rust-version against the locked dependencies.
versions() {
echo "--> rust-version of the workspace against its locked dependencies"
mkdir -p "$target"
cargo metadata --format-version 1 --locked >"$target/metadata.json"
python3 - "$target/metadata.json" <<'EOF'
import json, sys
meta = json.load(open(sys.argv[1]))
packages = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
def version(v):
    parts = [int(x) for x in (v or "0").split(".")]
    return tuple(parts + [0] * (3 - len(parts)))
published = [p for p in meta["packages"]
             if p["id"] in meta["workspace_members"] and p["publish"] != []]
ours = max(version(p["rust_version"]) for p in published)
# Everything a published crate needs to build (its dev-dependencies too, for its tests).
seen, stack = set(), [p["id"] for p in published]
while stack:
    id = stack.pop()
    if id in seen:
        continue
    seen.add(id)
    for dep in nodes[id]["deps"]:
        if packages[id]["id"] in meta["workspace_members"] or any(
                k["kind"] != "dev" for k in dep["dep_kinds"]):
            stack.append(dep["pkg"])
needs = max(seen, key=lambda id: version(packages[id]["rust_version"]))
need = packages[needs]
print(f"    rust-version {'.'.join(map(str, ours))}; the most demanding dependency is "
      f"{need['name']} {need['version']} (rust-version {need['rust_version']})")
if version(need["rust_version"]) > ours:
    sys.exit("a locked dependency needs a newer Rust than the workspace rust-version")
EOF
}

# What the docs and the public API document: the examples as well as what `cargo doc`
# documents by default (the libraries and the benchmark harness; the CLI's binary gives its
# path to the library). Documenting an example takes in the dev-dependencies, so their
# features unify as they did for clippy, whose checked dependencies both then reuse.
documented=(--workspace --all-features --no-deps --lib --bin mcpflow-bench --examples)

# Every feature of mcpflow alone, and none: what `cargo hack check --each-feature` runs,
# without building that tool on every clean run.
features() {
echo "--> cargo check -p mcpflow: default features, none, each alone"
local feature features
features="$(cargo metadata -q --no-deps --format-version 1 --locked | python3 -c '
import json, sys
mcpflow = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "mcpflow")
print(" ".join(sorted(f for f in mcpflow["features"] if f != "default")))')"
# Every feature together is the workspace's own build (the CLI turns on the rest), which
# clippy and the tests have checked.
local runs=("" "--no-default-features")
for feature in $features; do
    runs+=("--no-default-features --features $feature")
done
local log="$target/feature-check.log"
for flags in "${runs[@]}"; do
    echo "    cargo check -p mcpflow ${flags:-(default features)}"
    # shellcheck disable=SC2086 # the flags are words
    timeout 600 cargo check -j2 -p mcpflow $flags >"$log" 2>&1 || { cat "$log"; exit 1; }
    scripts/no-warnings.sh "$log" "mcpflow with ${flags:-its default features}"
done
}

# Each crate packaged and built from its package.
package() {
echo "--> cargo publish --workspace --dry-run"
# The dry run builds each packaged crate against the others as a registry serves them,
# and Cargo takes a registry crate of the same name and version as unchanged: it would
# reuse what an earlier run unpacked and built. So the unpacked copies go, and so do the
# fingerprints of what was built from them (whose dep-info names the registry's copy).
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/mcpflow*
local depinfo unit
{ grep -l "/registry/src/-" "$target"/debug/deps/mcpflow*.d 2>/dev/null || true; } |
    while IFS= read -r depinfo; do
        unit="${depinfo##*-}"
        rm -rf "$target"/debug/.fingerprint/mcpflow*-"${unit%.d}"
    done
# Built in the workspace's target directory with the test build's flags, so that the
# dependencies built there serve again, the CLI's nearly all (warnings are found by
# scripts/no-warnings.sh). The packaged CLI's binary takes the place of
# target/debug/mcpflow, so nothing may run that command meanwhile.
local log="$target/publish-dry-run.log"
timeout 1800 cargo publish --workspace --dry-run --allow-dirty -j2 >"$log" 2>&1 || { cat "$log"; exit 1; }
scripts/no-warnings.sh "$log" "a packaged crate"
echo "    every crate packaged and built from its package"
}

# The docs, warnings (broken links included) as errors.
docs() {
echo "--> cargo doc ${documented[*]}"
RUSTDOCFLAGS="-D warnings" timeout 1200 cargo doc -q -j2 "${documented[@]}"
}

# The public API against docs/public-api/.
api() {
echo "--> building scripts/api-listing"
# Unoptimised: it builds in half the time and runs for a second.
timeout 1200 cargo build -q --locked -j2 --manifest-path scripts/api-listing/Cargo.toml \
    --target-dir "$target/tools"
echo "--> public API listings (docs/public-api/)"
listings="$root/docs/public-api"
mkdir -p "$listings" "$target/public-api"
# Rustdoc JSON is unstable; RUSTC_BOOTSTRAP lets stable rustdoc write it. It is set for
# rustdoc alone: build scripts that read it (proc-macro2's) would otherwise rerun, and
# everything built on them with it.
rustdoc_json="$target/public-api/rustdoc-json"
printf '#!/bin/sh\nRUSTC_BOOTSTRAP=1 exec rustdoc "$@"\n' >"$rustdoc_json"
chmod +x "$rustdoc_json"
# Every feature, as docs.rs documents the crates, and what `docs` documents.
RUSTDOC="$rustdoc_json" RUSTDOCFLAGS="-Zunstable-options --output-format json" timeout 1200 \
    cargo doc -q -j2 "${documented[@]}"
changed=0
for crate in mcpflow-protocol mcpflow mcpflow-macros; do
    name="${crate//-/_}"
    "$target/tools/debug/api-listing" "$target/doc/$name.json" >"$target/public-api/$name.txt"
    if [[ "${MCPFLOW_BLESS_API:-0}" == 1 ]]; then
        cp "$target/public-api/$name.txt" "$listings/$name.txt"
    elif ! diff -u "$listings/$name.txt" "$target/public-api/$name.txt"; then
        changed=1
    fi
done
if [[ "$changed" == 1 ]]; then
    echo "the public API differs from docs/public-api/ (diff above): review it, then run" >&2
    echo "MCPFLOW_BLESS_API=1 scripts/release-check.sh and commit the listings" >&2
    exit 1
fi
if [[ "${MCPFLOW_BLESS_API:-0}" == 1 ]]; then
    echo "    wrote $(cat "$listings"/*.txt | wc -l) lines of public API to docs/public-api/"
else
    echo "    $(cat "$listings"/*.txt | wc -l) lines of public API, as recorded"
fi
}

# The parts named as arguments, in order; all five without any.
parts=("$@")
[[ ${#parts[@]} -gt 0 ]] || parts=(versions features package docs api)
for part in "${parts[@]}"; do
    case "$part" in
    versions | features | package | docs | api) "$part" ;;
    *) echo "release-check.sh: unknown part '$part' (versions, features, package, docs, api)" >&2; exit 2 ;;
    esac
done
