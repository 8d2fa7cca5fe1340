"""Judge one interop cell from a peer client's JSON line or mcpflow's output.

usage: judge.py peer-client OUTPUT_FILE SAMPLING_TEXT CHECK_CHANGE(0|1)
       judge.py mcpflow-client DIR SAMPLING_TEXT
       judge.py features OUTPUT_FILE   (interop/peers/features.py against the everything server)
       judge.py per-request OUTPUT_FILE VERSION CHECK_CHANGE(0|1)   (interop/peers/per_request.py / per_request.mjs)
       judge.py inspector LIST_OUTPUT CALL_OUTPUT   (mcp-inspector --cli --protocol-era modern)
       judge.py mcpflow-per-request DIR   (the mcpflow client at 2026-07-28 against interop/peers/server_per_request.py)
       judge.py tasks OUTPUT_FILE   (a peer client running a task against the everything server)
Prints `PASS detail` or `FAIL detail` (one line).
"""

import json
import os
import sys
from pathlib import Path


def last_json_line(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                pass
    return None


def peer_client(path, sampling_text, check_change):
    raw = Path(path).read_text(errors="replace")
    out = last_json_line(raw)
    if out is None:
        tail = " | ".join(raw.strip().splitlines()[-3:])[:300]
        return False, f"no JSON output ({tail or 'empty'})"
    problems, info = [], []
    if not out.get("ok"):
        problems.append(f"error: {out.get('error', '?')[:300]}")
    pv = out.get("protocolVersion")
    info.append(f"proto {pv}")
    if not pv:
        problems.append("no negotiated protocol version")
    calls = {c["tool"]: c for c in out.get("calls", [])}
    names = [c["tool"] for c in out.get("calls", [])]
    if out.get("ok") and not out.get("tools"):
        problems.append("tools/list empty")
    # progress: the first call is the progress tool
    if names:
        c = calls[names[0]]
        w = c.get("wire", {})
        if "error" in c:
            problems.append(f"{c['tool']}: {c['error'][:200]}")
        b, a = w.get("progress_before_result", 0), w.get("progress_after_result", 0)
        info.append(f"progress {b} before result (callback saw {c.get('progress_callbacks')})")
        if b < 1:
            problems.append(f"{c['tool']}: no progress before the result (order {w.get('order')})")
        if a:
            problems.append(f"{c['tool']}: {a} progress after the result")
    logs_on_wire = sum(calls[n]["wire"]["order"][: calls[n]["wire"]["order"].index("RESPONSE")].count("notifications/message")
                       for n in names if "RESPONSE" in calls[n].get("wire", {}).get("order", []))
    info.append(f"logs {logs_on_wire} on wire/{len(out.get('logs', []))} delivered")
    if out.get("era") == "modern" and logs_on_wire == 0:
        # 2026-07-28 sends log messages only for requests whose `_meta` opts in with a
        # logLevel; the TypeScript v2 client has no option to send one.
        info.append("logs not requested (2026-07-28 without a per-request logLevel)")
    elif logs_on_wire < 1 or not out.get("logs"):
        problems.append("no log notification before a result, or not delivered to the log callback")
    per_request_era = out.get("era") == "modern" or (pv or "") >= "2026-07-28"
    if check_change and per_request_era:
        # 2026-07-28 delivers list changes only on a subscriptions/listen stream, which this
        # client does not open; the 2026-07-28 cells check list changes on listen.
        info.append("list change not sent without a listen stream (2026-07-28)")
    elif check_change:
        change_tool = os.environ.get("JUDGE_CHANGE_TOOL")
        ch = [n for n in names if (n == change_tool if change_tool else "change" in n)]
        if ch:
            order = calls[ch[0]]["wire"]["order"]
            mid = "notifications/tools/list_changed" in order[: order.index("RESPONSE")] if "RESPONSE" in order else False
            info.append(f"list_changed mid-call {'yes' if mid else 'no'}")
            if os.environ.get("JUDGE_CHANGE_ANY_TIME") == "1":
                # Across instances the change travels through Redis to whichever instance
                # holds the client's GET stream: it must arrive, but another stream than the
                # call's may carry it after the call's answer.
                if "notifications/tools/list_changed" not in order or calls[ch[0]].get("list_changed", 0) < 1:
                    problems.append(f"list_changed not received (order {order}, handler {calls[ch[0]].get('list_changed')})")
            elif not mid or calls[ch[0]].get("list_changed", 0) < 1:
                problems.append(f"list_changed not received mid-call (order {order}, handler {calls[ch[0]].get('list_changed')})")
    sampling_tool = os.environ.get("JUDGE_SAMPLING_TOOL")
    sm = [n for n in names if (n == sampling_tool if sampling_tool else "sampling" in n)]
    if sm:
        c = calls[sm[0]]
        ok = sampling_text in (c.get("text") or "") and out.get("sampling_requests", 0) >= 1
        info.append(f"sampling {'ok' if ok else 'FAILED'}")
        if not ok:
            problems.append(f"sampling: {c.get('error') or c.get('text')!r}")
    if out.get("sdk_errors"):
        info.append(f"client SDK errors: {out['sdk_errors'][:2]}")
    return (not problems), "; ".join(problems or info)


def mcpflow_client(d, sampling_text):
    d = Path(d)
    problems, info = [], []

    def load(name):
        rc = int((d / f"{name}.rc").read_text().strip() or "99")
        out = last_json_line((d / f"{name}.out").read_text(errors="replace"))
        err = (d / f"{name}.err").read_text(errors="replace").strip().splitlines()
        return rc, out, (err[-1] if err else "")

    rc, ins, err = load("inspect")
    if rc != 0 or ins is None:
        problems.append(f"inspect exit {rc}: {err[:300]}")
    else:
        info.append(f"proto {ins.get('protocolVersion')}")
        tools = [t.get("name") for t in ins.get("tools", [])]
        if "echo" not in tools:
            problems.append(f"inspect: no echo tool in {tools}")
    rc, echo, err = load("echo")
    if rc != 0 or echo is None:
        problems.append(f"call echo exit {rc}: {err[:300]}")
    else:
        n = echo.get("notifications", {})
        text = "".join(b.get("text", "") for b in echo["result"].get("content", []))
        info.append(f"progress {n.get('notifications/progress', 0)}/2 before result, logs {n.get('notifications/message', 0)}")
        if n.get("notifications/progress", 0) != 2:
            problems.append(f"echo: expected 2 progress before the result, got {n}")
        if n.get("notifications/message", 0) < 1:
            problems.append(f"echo: no log notification ({n})")
        if text != "hello":
            problems.append(f"echo: result text {text!r}")
    rc, ch, err = load("change")
    if rc != 0 or ch is None:
        problems.append(f"call change_tools exit {rc}: {err[:300]}")
    else:
        n = ch.get("notifications", {}).get("notifications/tools/list_changed", 0)
        info.append(f"list_changed {n}")
        if n < 1:
            problems.append(f"change_tools: no list_changed before the result ({ch.get('notifications')})")
    rc, sm, err = load("sampling")
    if rc != 0 or sm is None:
        problems.append(f"call ask_sampling exit {rc}: {err[:300]}")
    else:
        text = "".join(b.get("text", "") for b in sm["result"].get("content", []))
        info.append("sampling ok" if sampling_text in text else "sampling FAILED")
        if sampling_text not in text:
            problems.append(f"ask_sampling: result {text!r}")
    return (not problems), "; ".join(problems or info)


def mcpflow_per_request(d):
    """mcpflow's client pinned to 2026-07-28 against server_per_request.py: the version, a call
    with progress and a log, a list change, and an elicitation through input_required."""
    d = Path(d)
    problems, info = [], []

    def load(name):
        rc = int((d / f"{name}.rc").read_text().strip() or "99")
        out = last_json_line((d / f"{name}.out").read_text(errors="replace"))
        err = (d / f"{name}.err").read_text(errors="replace").strip().splitlines()
        return rc, out, (err[-1] if err else "")

    def text(out):
        return "".join(b.get("text", "") for b in out["result"].get("content", []))

    rc, ins, err = load("inspect")
    if rc != 0 or ins is None:
        problems.append(f"inspect exit {rc}: {err[:300]}")
    else:
        info.append(f"proto {ins.get('protocolVersion')}")
        if ins.get("protocolVersion") != "2026-07-28":
            problems.append(f"inspect: negotiated {ins.get('protocolVersion')}, not 2026-07-28")
    rc, echo, err = load("echo")
    if rc != 0 or echo is None:
        problems.append(f"call echo exit {rc}: {err[:300]}")
    else:
        n = echo.get("notifications", {})
        info.append(f"progress {n.get('notifications/progress', 0)}/2, logs {n.get('notifications/message', 0)}")
        if n.get("notifications/progress", 0) != 2 or n.get("notifications/message", 0) < 1 or text(echo) != "hello":
            problems.append(f"echo: notifications {n}, result {text(echo)!r}")
    rc, ch, err = load("change")
    if rc != 0 or ch is None:
        problems.append(f"call change_tools exit {rc}: {err[:300]}")
    else:
        n = ch.get("notifications", {}).get("notifications/tools/list_changed", 0)
        info.append(f"list_changed {n}")
        if n < 1:
            problems.append(f"change_tools: no list_changed ({ch.get('notifications')})")
    rc, cf, err = load("confirm")
    if rc != 0 or cf is None:
        problems.append(f"call confirm exit {rc}: {err[:300]}")
    elif text(cf) != "accept True":
        problems.append(f"confirm: result {text(cf)!r}")
    else:
        info.append("elicitation via input_required ok")
    return (not problems), "; ".join(problems or info)


def features(path):
    """2025-11-25 features: sampling with tools, URL elicitation required, a wrapped list."""
    raw = Path(path).read_text(errors="replace")
    out = last_json_line(raw)
    if out is None:
        tail = " | ".join(raw.strip().splitlines()[-3:])[:300]
        return False, f"no JSON output ({tail or 'empty'})"
    if not out.get("ok"):
        return False, f"client error: {out.get('error')}"
    calls = {c["tool"]: c for c in out.get("calls", [])}
    problems, info = [], [f"protocol {out.get('protocolVersion')}"]

    sampled = calls.get("sample_with_tools", {})
    offered = [[t.get("name") for t in s.get("tools", [])] for s in out.get("sampling", [])]
    choice = [(s.get("toolChoice") or {}).get("mode") for s in out.get("sampling", [])]
    text = " ".join(b.get("text", "") for b in sampled.get("result", {}).get("content", []))
    if offered == [["get_weather"]] and choice == ["auto"] and "called get_weather" in text:
        info.append("sampling with tools ok")
    else:
        problems.append(f"sample_with_tools: offered {offered}, toolChoice {choice}, result {sampled}")

    error = calls.get("needs_authorization", {}).get("error") or {}
    elicitations = (error.get("data") or {}).get("elicitations") or []
    completed = [(n.get("params") or {}).get("elicitationId") for n in out.get("completed", [])]
    if (
        error.get("code") == -32042
        and [e.get("elicitationId") for e in elicitations] == ["authorize-1"]
        and all(e.get("mode") == "url" and e.get("url", "").startswith("https://") for e in elicitations)
        and completed == ["authorize-1"]
    ):
        info.append("URL elicitation -32042 + complete ok")
    else:
        problems.append(f"needs_authorization: error {error}, completed {completed}")

    numbers = calls.get("list_numbers", {})
    schema = (out.get("outputSchemas") or {}).get("list_numbers") or {}
    structured = numbers.get("result", {}).get("structuredContent")
    if (
        structured == {"result": [1, 2, 3]}
        and schema.get("type") == "object"
        and schema.get("required") == ["result"]
    ):
        info.append("wrapped structured output validated by the SDK")
    else:
        problems.append(f"list_numbers: {numbers}, outputSchema {schema}")
    return (not problems), "; ".join(problems or info)


def per_request(path, version, check_change):
    """A per_request.py / per_request.mjs run: the negotiated version, a call with progress, an elicitation
    answered through the era's own channel, and (when asked) a list change seen on listen."""
    try:
        out = last_json_line(open(path).read())
    except Exception as e:
        return False, f"no JSON line: {e}"
    if out is None:
        return False, "no JSON line"
    if out.get("error"):
        return False, f"{out.get('client')}: {out['error']}"
    problems = []
    if out.get("protocol_version") != version:
        problems.append(f"negotiated {out.get('protocol_version')}, expected {version}")
    progress = (out.get("progress_call") or {}).get("progress") or []
    if not progress:
        problems.append(f"no progress: {out.get('progress_call')}")
    elicit = out.get("elicit_call") or {}
    if len(elicit.get("elicitations") or []) != 1 or "interop@example.com" not in (elicit.get("text") or ""):
        problems.append(f"elicitation: {elicit}")
    if check_change and not out.get("list_changed"):
        problems.append(f"no tools/list_changed on listen (honored {out.get('listen_honored')}, call {out.get('change_call')})")
    if problems:
        return False, "; ".join(problems)
    change = ", list change on listen" if check_change else ""
    return True, f"{out.get('client')} negotiated {version} in {out.get('connect_ms')} ms; progress {len(progress)}, elicitation{change}"


def inspector(list_path, call_path):
    """The Inspector CLI with --protocol-era modern: tools/list, then a call whose result carries
    the serverInfo `_meta` stamp that only a 2026-07-28 result has."""
    problems, info = [], []
    for what, path in (("tools/list", list_path), ("tools/call", call_path)):
        try:
            out = json.loads(Path(path).read_text())
        except Exception as e:
            problems.append(f"{what}: no JSON ({e})")
            continue
        if "error" in out:
            problems.append(f"{what}: {out['error']}")
            continue
        result = out.get("result", out)
        if what == "tools/list":
            names = [t.get("name") for t in result.get("tools", [])]
            if "test_simple_text" not in names:
                problems.append(f"tools/list lacks test_simple_text: {names[:5]}")
            else:
                info.append(f"{len(names)} tools")
        else:
            stamp = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
            texts = [b.get("text") for b in result.get("content", []) if b.get("type") == "text"]
            if not stamp:
                problems.append(f"the call result has no serverInfo stamp (not 2026-07-28): {result}")
            elif not texts:
                problems.append(f"the call returned no text: {result}")
            else:
                info.append(f"call answered by {stamp.get('name')} at 2026-07-28")
    return (not problems), "; ".join(problems or info)


def tasks(path):
    """2025-11-25 tasks run by the TypeScript SDK 1.x client (interop/peers/tasks.mjs)."""
    raw = Path(path).read_text(errors="replace")
    out = last_json_line(raw)
    if out is None:
        tail = " | ".join(raw.strip().splitlines()[-3:])[:300]
        return False, f"no JSON output ({tail or 'empty'})"
    if out.get("errors"):
        return False, f"client error: {out['errors'][0][:300]}"
    problems, info = [], []
    caps = out.get("capabilities") or {}
    if "list" in caps and "cancel" in caps and "call" in ((caps.get("requests") or {}).get("tools") or {}):
        info.append("tasks capability")
    else:
        problems.append(f"capabilities.tasks {caps}")
    runs = out.get("runs") or {}
    required = runs.get("required") or {}
    task_id = required.get("taskId")
    if (
        required.get("statuses", [None])[0] == "working"
        and required.get("statuses", [None])[-1] == "completed"
        and required.get("text") == f"task {task_id} finished"
        and required.get("relatedTask") == task_id
    ):
        info.append("required task streamed to its result")
    else:
        problems.append(f"required: {required}")
    asked = runs.get("elicitation") or {}
    if (
        "input_required" in asked.get("statuses", [])
        and asked.get("text") == "hello Ada"
        and out.get("elicitations") == [{"taskId": asked.get("taskId")}]
    ):
        info.append("elicitation via tasks/result")
    else:
        problems.append(f"elicitation: {asked}, elicitations {out.get('elicitations')}")
    if runs.get("optionalDirect") != "ran directly":
        problems.append(f"optional tool called directly: {runs.get('optionalDirect')}")
    if out.get("listed") != [task_id, asked.get("taskId")]:
        problems.append(f"tasks/list: {out.get('listed')}")
    if out.get("cancelFinished") != -32602:
        problems.append(f"cancelling a finished task: {out.get('cancelFinished')}")
    else:
        info.append("list + cancel refusal ok")
    return (not problems), "; ".join(problems or info)


if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "peer-client":
        ok, detail = peer_client(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
    elif kind == "features":
        ok, detail = features(sys.argv[2])
    elif kind == "inspector":
        ok, detail = inspector(sys.argv[2], sys.argv[3])
    elif kind == "per-request":
        ok, detail = per_request(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
    elif kind == "mcpflow-per-request":
        ok, detail = mcpflow_per_request(sys.argv[2])
    elif kind == "tasks":
        ok, detail = tasks(sys.argv[2])
    else:
        ok, detail = mcpflow_client(sys.argv[2], sys.argv[3])
    print(("PASS " if ok else "FAIL ") + detail)
