"""Interop peer: the Python `mcp` 1.x client runs tasks (2025-11-25, experimental) against
a server, with the same steps and output as tasks.mjs (judged by `judge.py tasks`).

usage: tasks.py (--url URL | -- CMD [ARGS...])
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

RELATED = "io.modelcontextprotocol/related-task"
out: dict[str, Any] = {"capabilities": None, "runs": {}, "elicitations": [], "errors": []}


async def on_elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    meta = params.meta.model_dump(by_alias=True) if params.meta is not None else {}
    out["elicitations"].append(meta.get(RELATED))
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def run_task(session: ClientSession, name: str) -> dict[str, Any]:
    run: dict[str, Any] = {"statuses": [], "taskId": None, "text": None, "error": None}
    created = await session.experimental.call_tool_as_task(name, {}, ttl=60000)
    task_id = created.task.taskId
    run["taskId"] = task_id
    run["statuses"].append(created.task.status)
    with anyio.fail_after(20):
        while True:
            task = await session.experimental.get_task(task_id)
            if task.status != run["statuses"][-1]:
                run["statuses"].append(task.status)
            if task.status in ("completed", "failed", "cancelled", "input_required"):
                break
            await anyio.sleep((task.pollInterval or 500) / 1000)
        result = await session.experimental.get_task_result(task_id, types.CallToolResult)
    final = await session.experimental.get_task(task_id)
    if final.status != run["statuses"][-1]:
        run["statuses"].append(final.status)
    run["text"] = result.content[0].text if result.content else None
    meta = result.meta or {}
    run["relatedTask"] = (meta.get(RELATED) or {}).get("taskId")
    return run


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = [c for c in args.cmd if c != "--"]
    if args.url:
        client = streamablehttp_client(args.url)
    else:
        client = stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:]))
    async with client as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
            init = await session.initialize()
            tasks = init.capabilities.tasks
            out["capabilities"] = tasks.model_dump(by_alias=True, exclude_none=True) if tasks else None
            out["runs"]["required"] = await run_task(session, "test_task_required")
            out["runs"]["elicitation"] = await run_task(session, "test_task_elicitation")
            direct = await session.call_tool("test_task_optional", {})
            out["runs"]["optionalDirect"] = direct.content[0].text if direct.content else None
            listed = await session.experimental.list_tasks()
            out["listed"] = [t.taskId for t in listed.tasks]
            try:
                await session.experimental.cancel_task(out["runs"]["required"]["taskId"])
                out["cancelFinished"] = "accepted"
            except Exception as e:  # noqa: BLE001 - the error code is the point
                out["cancelFinished"] = getattr(getattr(e, "error", None), "code", str(e))


try:
    anyio.run(main)
except Exception as e:  # noqa: BLE001 - reported in the JSON line
    out["errors"].append(repr(e))
print(json.dumps(out))
sys.exit(0)
