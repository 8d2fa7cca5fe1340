"""Interop peer client for the 2026-07-28 era, on the Python `mcp` 2.x `Client` (mode auto).

usage: per_request.py [--mode auto|legacy|2026-07-28] [--progress TOOL] [--elicit TOOL] [--change TOOL]
                 (--url URL | -- CMD [ARGS...])

Connects (probing `server/discover` first in auto mode), then: calls the progress tool with a
progress callback; calls the elicitation tool, answering the elicitation from a callback (on a
2026-07-28 connection it arrives inside an `input_required` result); opens
`subscriptions/listen` for tool-list changes and calls the change tool, waiting (bounded) for the
event. Prints one JSON line: the negotiated version, connect time, and what each step saw.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import time
from typing import Any

import anyio
from mcp import StdioServerParameters, types
from mcp.client import Client

VERSION = importlib.metadata.version("mcp")
ELICITED = {"username": "interop", "email": "interop@example.com"}


def args_for(tool: str) -> dict[str, Any]:
    return {"text": "hello"} if tool == "echo" else {}


def text_of(result: Any) -> str:
    return "\n".join(getattr(b, "text", "") for b in getattr(result, "content", []) or [] if getattr(b, "text", None))


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="auto")
    p.add_argument("--progress", default="test_tool_with_progress")
    p.add_argument("--elicit", default="test_elicitation")
    p.add_argument("--change", default="")
    p.add_argument("--url")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if bool(a.url) == bool(cmd):
        p.error("give either --url URL or -- CMD [ARGS...]")
    server: Any = a.url if a.url else StdioServerParameters(command=cmd[0], args=cmd[1:])
    elicitations: list[str] = []

    async def on_elicit(context: Any, params: Any) -> Any:
        elicitations.append(getattr(params, "message", ""))
        return types.ElicitResult(action="accept", content=ELICITED)

    out: dict[str, Any] = {"client": f"python-mcp-{VERSION}", "mode": a.mode, "transport": "http" if a.url else "stdio"}
    t0 = time.monotonic()
    try:
        async with Client(server, mode=a.mode, elicitation_callback=on_elicit, read_timeout_seconds=20) as client:
            out["connect_ms"] = round((time.monotonic() - t0) * 1000, 1)
            out["protocol_version"] = client.protocol_version
            info = client.server_info
            out["server"] = getattr(info, "name", None)
            out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)

            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            r = await client.call_tool(a.progress, args_for(a.progress), progress_callback=on_progress)
            out["progress_call"] = {"text": text_of(r), "progress": progress, "is_error": bool(r.is_error)}

            r = await client.call_tool(a.elicit, {"message": "who are you?"} if a.elicit.startswith("test_") else args_for(a.elicit))
            out["elicit_call"] = {"text": text_of(r), "elicitations": elicitations, "is_error": bool(r.is_error)}

            if a.change:
                changed = anyio.Event()
                async with client.listen(tools_list_changed=True) as sub:
                    out["listen_honored"] = str(getattr(sub, "honored", ""))

                    async def wait_event() -> None:
                        async for _event in sub:
                            changed.set()
                            return

                    async with anyio.create_task_group() as tg:
                        tg.start_soon(wait_event)
                        r = await client.call_tool(a.change, {})
                        out["change_call"] = {"text": text_of(r), "is_error": bool(r.is_error)}
                        with anyio.move_on_after(10):
                            await changed.wait()
                        tg.cancel_scope.cancel()
                out["list_changed"] = changed.is_set()
    except Exception as e:  # the judge reports it
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out))


if __name__ == "__main__":
    anyio.run(main)
