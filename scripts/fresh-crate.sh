#!/usr/bin/env bash
# Builds the README's "Getting started" (the crate docs' too) as a new user would: a fresh crate outside the
# workspace whose Cargo.toml and sources are the README's blocks, verbatim, with only the
# `mcpflow` dependency pointed at this checkout. It builds with warnings as errors, runs
# the README's shell commands (comparing their output with the `# ` lines under them),
# and runs every example. Each step is bounded.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root="$PWD"
target="${CARGO_TARGET_DIR:-$root/target}"
crate="$(mktemp -d)/calc"
trap 'rm -rf "$(dirname "$crate")"' EXIT

if [[ "${MCPFLOW_PREBUILT:-0}" != 1 ]]; then
    echo "--> building the mcpflow command"
    timeout 900 cargo build -j2 -q -p mcpflow-cli
fi

echo "--> generating the crate from README.md in $crate"
(cd "$(dirname "$crate")" && cargo new -q --vcs none --bin calc)
python3 - "$root" "$crate" <<'EOF'
import pathlib, re, sys

root, crate = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
readme = (root / "README.md").read_text()

# Every fenced block: its info string, its section, the prose before it (since the
# previous block) and its body.
blocks, section, prose, fence, body = [], "", [], None, []
for line in readme.splitlines():
    if fence is None and line.startswith("```"):
        fence, body = line[3:].strip(), []
    elif fence is not None and line.startswith("```"):
        blocks.append((fence, section, "\n".join(prose), "\n".join(body) + "\n"))
        fence, prose = None, []
    elif fence is not None:
        body.append(line)
    else:
        if line.startswith("## "):
            section = line[3:]
        prose.append(line)

def file_named_in(text):
    names = re.findall(r"`((?:src|examples)/[a-z_]+\.rs)`", text)
    return names[-1] if names else None

# The crate docs show the same section (crates/mcpflow/docs/getting-started.md, one
# heading level up).
section_text = readme.split("\n## Getting started\n", 1)[1].split("\n## ", 1)[0]
docs = (root / "crates/mcpflow/docs/getting-started.md").read_text()
docs_section = docs.split("# Getting started\n", 1)[1]
demoted, in_fence = [], False
for line in docs_section.splitlines():
    if line.startswith("```"):
        in_fence = not in_fence
    demoted.append("#" + line if line.startswith("#") and not in_fence else line)
if section_text.strip() != "\n".join(demoted).strip():
    sys.exit("README.md's Getting started differs from crates/mcpflow/docs/getting-started.md")

tomls = [body for info, _, _, body in blocks if info == "toml"]
if len(tomls) != 1:
    sys.exit(f"README.md: expected one toml block (the Cargo.toml lines), found {len(tomls)}")
dependencies = tomls[0]
pin = f'mcpflow = {{ version = "0.1", path = "{root}/crates/mcpflow" }}'
dependencies, count = re.subn(r'^mcpflow = "[^"]*"$', pin, dependencies, flags=re.M)
if count != 1:
    sys.exit("README.md: the toml block has no `mcpflow = \"...\"` line")
manifest = crate / "Cargo.toml"
header = manifest.read_text().split("[dependencies]")[0]
manifest.write_text(header + dependencies)

written = []
for info, _, before, body in blocks:
    if not info.startswith("rust") or "ignore" in info:
        continue
    name = file_named_in(before)
    if name is None:
        sys.exit("README.md: a rust block does not say which file it is "
                 "(name `src/main.rs` or `examples/NAME.rs` in the text before it):\n" + body)
    path = crate / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    written.append(name)
if "src/main.rs" not in written:
    sys.exit("README.md: no block is `src/main.rs`")

commands = [body for info, section, _, body in blocks
            if info == "sh" and section == "Getting started"]
(crate / "readme-commands.sh").write_text("".join(commands))
print("    files:", ", ".join(written))
EOF
cp Cargo.lock "$crate/"
echo "--- $crate/Cargo.toml"
cat "$crate/Cargo.toml"
echo "---"

cd "$crate"
# The publish dry run (scripts/release-check.sh package) builds mcpflow's dependencies with
# its default features in the workspace's target directory, with the workspace's cargo
# configuration: the crate builds there too (its build directory), reusing them rather
# than building them again, and keeps its binaries apart (its own target directory).
mkdir -p .cargo
cp "$root/.cargo/config.toml" .cargo/config.toml
export CARGO_BUILD_BUILD_DIR="$target"
export CARGO_TARGET_DIR="$crate/target"
export PATH="$target/debug:$PATH"

echo "--> cargo build --bins --examples (warnings are errors)"
timeout 900 cargo build -j2 --bins --examples >build.log 2>&1 || { cat build.log; exit 1; }
"$root/scripts/no-warnings.sh" build.log "the README's crate"

# Each command of the README's shell block runs, and what it prints must be the
# `# ` lines that follow it.
command=""
expected=""
check_command() {
    [ -n "$command" ] || return 0
    echo "--> $command"
    actual="$(timeout 120 bash -c "$command" </dev/null)"
    if [ "$actual" != "$expected" ]; then
        printf 'the README says `%s` prints:\n%s\nbut it printed:\n%s\n' "$command" "$expected" "$actual" >&2
        exit 1
    fi
}
while IFS= read -r line; do
    case "$line" in
        "# "*) expected="${expected:+$expected$'\n'}${line#\# }" ;;
        "") ;;
        *) check_command; command="$line"; expected="" ;;
    esac
done < readme-commands.sh
check_command

for example in examples/*.rs; do
    name="$(basename "$example" .rs)"
    echo "--> cargo run --example $name"
    output="$(timeout 120 cargo run -q --example "$name" </dev/null)"
    printf '%s\n' "$output"
    # The client example prints the tool's answer.
    if [ "$name" = client ] && [ "$output" != 42 ]; then
        echo "examples/client.rs printed '$output', not 42" >&2
        exit 1
    fi
done
echo "the README's getting-started crate builds and runs"
