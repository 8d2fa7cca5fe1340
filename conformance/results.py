"""Read the output of the MCP conformance runner for scripts/conformance.sh.

usage: results.py baseline FILE
           Check that the expected-failures file lists only OAuth client scenarios (`auth/*`).
       results.py client-suite CONSOLE_OUTPUT BASELINE
           Judge a `conformance client --suite ... --expected-failures BASELINE` run. Prints one
           line per finding: `retry SCENARIO` for a non-auth scenario to re-run on its own
           (it failed, or produced no passing check), `fail MESSAGE` for anything a re-run
           cannot fix (a stale baseline entry, an unexpected auth failure, an unreadable run).
       results.py solo CONSOLE_OUTPUT
           Judge a single-scenario client run: prints `pass` or `fail MESSAGE`.
       results.py details DIR [SCENARIO...]
           Print every FAILURE and WARNING check found in DIR/**/checks.json, with its details
           (only those of the named scenarios, when any are named).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SUMMARY = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$")
RUN_DIR_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


def clean_lines(path: str) -> list[str]:
    return [ANSI.sub("", line).rstrip() for line in Path(path).read_text(errors="replace").splitlines()]


def read_baseline(path: str) -> dict[str, list[str]]:
    """The runner's YAML baseline: top-level `client:`/`server:` keys with `- name` items."""
    out: dict[str, list[str]] = {}
    key = None
    for raw in Path(path).read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        m = re.match(r"^(\w+):\s*(\[\s*\])?$", line)
        if m:
            key = m.group(1)
            out.setdefault(key, [])
            continue
        m = re.match(r"^\s+-\s+[\"']?([^\"']+?)[\"']?$", line)
        if m and key is not None:
            out[key].append(m.group(1))
            continue
        raise SystemExit(f"{path}: cannot read line {raw!r}")
    return out


def baseline(path: str) -> int:
    b = read_baseline(path)
    bad = [f"{k}: {n}" for k, names in b.items() for n in names if k != "client" or not n.startswith("auth/")]
    if bad:
        print(f"{path} may list only OAuth client scenarios (auth/*); it also lists: {', '.join(bad)}")
        return 1
    return 0


def section(lines: list[str], title: str) -> list[str]:
    """Names listed under a heading of the baseline report (`  ✗ name` / `  ✓ name` / `  ~ name`)."""
    out, inside = [], False
    for line in lines:
        if line.startswith(title):
            inside = True
            continue
        if inside:
            m = re.match(r"^  [✗✓~] (\S+)$", line)
            if m:
                out.append(m.group(1))
            else:
                inside = False
    return out


def client_suite(console: str, baseline_path: str) -> int:
    lines = clean_lines(console)
    expected = set(read_baseline(baseline_path).get("client", []))
    rows = {}
    for line in lines:
        m = SUMMARY.match(line)
        if m:
            rows[m.group(2)] = (m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5) or 0))
    if not rows:
        print("fail no suite summary in the runner's output (did it crash or time out?)")
        return 0
    for name in section(lines, "Stale baseline entries"):
        print(f"fail {name} now passes: remove it from {baseline_path}")
    for name in section(lines, "Unexpected failures"):
        if name.startswith("auth/"):
            print(f"fail {name} failed and is not in {baseline_path}")
    for name, (mark, passed, failed, warnings) in rows.items():
        if name.startswith("auth/") or name in expected:
            continue
        if mark == "✗" or passed == 0:
            print(f"retry {name}")
    return 0


def solo(console: str) -> int:
    lines = clean_lines(console)
    counts = next((m for m in (re.match(r"^Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings$", x) for x in lines) if m), None)
    overall = "✅ OVERALL: PASSED" in lines
    if counts is None:
        print("fail no result in the runner's output")
    elif not overall:
        print(f"fail {counts.group(0)}; " + "; ".join(x.strip() for x in lines if "⚠️" in x or x.startswith("❌")))
    elif int(counts.group(1)) == 0:
        print(f"fail no check passed ({counts.group(0)}): the client did not do what the scenario asks")
    else:
        print("pass")
    return 0


def details(d: str, *only: str) -> int:
    for f in sorted(Path(d).glob("**/checks.json")):
        scenario = RUN_DIR_SUFFIX.sub("", str(f.parent.relative_to(d)))
        if only and scenario not in only and scenario.removeprefix("server-") not in only:
            continue
        try:
            checks = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"  {scenario}: unreadable {f}: {e}")
            continue
        for c in checks:
            if c.get("status") not in ("FAILURE", "WARNING"):
                continue
            msg = c.get("errorMessage") or c.get("description") or ""
            print(f"  {scenario}: {c['status']} [{c.get('id')}] {msg}")
            if c.get("details"):
                text = json.dumps(c["details"], default=str)
                print(f"      details: {text[:1500]}{' ...' if len(text) > 1500 else ''}")
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    sys.exit({"baseline": baseline, "client-suite": client_suite, "solo": solo, "details": details}[cmd](*args))
