"""Interop peer client on the Python `mcp` SDK (works on 2.x and 1.30).

usage: client.py [--mode auto|legacy] [--progress TOOL] [--log TOOL] [--change TOOL]
                 [--sampling TOOL] [--sampling-text TEXT] (--url URL | -- CMD [ARGS...])

Starts CMD over stdio (or connects to URL over streamable HTTP), lists tools, calls each named tool (empty name = skip) and prints
one JSON line: protocol version, server, tools, and per call the result text, progress
seen by the callback, and the wire order of what arrived (recorded at the transport, so
the SDK's callback scheduling does not blur the server's ordering).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import time
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import StdioServerParameters, types
from mcp.client.stdio import stdio_client

VERSION = importlib.metadata.version("mcp")
MAJOR = int(VERSION.split(".")[0])

wire: list[dict[str, Any]] = []  # inbound messages, in arrival order
state: dict[str, Any] = {"logs": [], "list_changed": 0, "sampling_requests": 0, "notifications": []}


def _record(item: Any) -> None:
    if isinstance(item, Exception):
        wire.append({"exception": repr(item)})
        return
    msg = getattr(item, "message", item)
    try:
        d = msg.model_dump(mode="json", by_alias=True, exclude_none=True)
    except Exception as e:  # pragma: no cover
        d = {"unparsed": repr(msg), "error": repr(e)}
    wire.append(d)


@asynccontextmanager
async def tapped(transport: Any):
    """Wrap a transport context (stdio or streamable HTTP) so every inbound message is recorded."""
    async with transport as streams:
        # mcp 1.x's streamable_http_client yields (read, write, get_session_id).
        read, write = streams[0], streams[1]
        send, recv = anyio.create_memory_object_stream(1000)

        async def pump() -> None:
            async with send:
                async for item in read:
                    _record(item)
                    await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(pump)
            try:
                yield recv, write
            finally:
                tg.cancel_scope.cancel()


def _method_of(message: Any) -> str | None:
    inner = getattr(message, "root", message)
    return getattr(inner, "method", None)


async def message_handler(message: Any) -> None:
    if isinstance(message, Exception):
        state["notifications"].append(f"exception: {message!r}")
        return
    method = _method_of(message)
    state["notifications"].append(method)
    if method == "notifications/tools/list_changed":
        state["list_changed"] += 1


async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
    state["logs"].append({"level": str(params.level), "data": params.data})


def make_sampling_callback(text: str):
    async def sampling_callback(context: Any, params: types.CreateMessageRequestParams) -> Any:
        state["sampling_requests"] += 1
        return types.CreateMessageResult.model_validate(
            {"role": "assistant", "content": {"type": "text", "text": text}, "model": "interop-fixed", "stopReason": "endTurn"}
        )

    return sampling_callback


def args_for(tool: str) -> dict[str, Any]:
    if tool == "echo":
        return {"text": "hello"}
    if "sampling" in tool:
        return {"prompt": "say something"}
    if tool == "ask_model":
        return {"question": "say something"}
    return {}


def result_text(result: Any) -> str:
    out = []
    for block in getattr(result, "content", []) or []:
        t = getattr(block, "text", None)
        if t is not None:
            out.append(t)
    return "\n".join(out)


def wire_summary(request_id: Any, start: int) -> dict[str, Any]:
    """What arrived on the wire between the call's send and a bit after its response."""
    seen: list[str] = []
    progress_before = progress_after = 0
    answered = False
    tokens = []
    for d in wire[start:]:
        if d.get("id") == request_id and ("result" in d or "error" in d):
            answered = True
            seen.append("RESPONSE")
            continue
        m = d.get("method")
        if m is None:
            continue
        seen.append(m)
        if m == "notifications/progress":
            tokens.append((d.get("params") or {}).get("progressToken"))
            if answered:
                progress_after += 1
            else:
                progress_before += 1
    return {
        "order": seen,
        "progress_before_result": progress_before,
        "progress_after_result": progress_after,
        "progress_tokens": tokens,
    }


async def do_call(call_tool, name: str) -> dict[str, Any]:
    progress_seen: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_seen.append(progress)

    start = len(wire)
    logs_before = len(state["logs"])
    lc_before = state["list_changed"]
    entry: dict[str, Any] = {"tool": name}
    t0 = time.monotonic()
    try:
        result = await call_tool(name, args_for(name), progress_callback=on_progress)
        entry["text"] = result_text(result)
        entry["is_error"] = bool(getattr(result, "isError", False) or getattr(result, "is_error", False))
    except Exception as e:
        entry["error"] = f"{type(e).__name__}: {e}"
    entry["seconds"] = round(time.monotonic() - t0, 3)
    await anyio.sleep(0.3)  # let late callbacks (and late wire messages) land
    # Find the tools/call request id: the response is the first message with an id after start
    # that carries a result/error; requests we sent are not on the inbound wire.
    rid = next((d.get("id") for d in wire[start:] if "id" in d and ("result" in d or "error" in d)), None)
    entry["wire"] = wire_summary(rid, start)
    entry["progress_callbacks"] = len(progress_seen)
    entry["logs"] = len(state["logs"]) - logs_before
    entry["list_changed"] = state["list_changed"] - lc_before
    return entry


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="auto")
    p.add_argument("--progress", default="echo")
    p.add_argument("--log", default="echo")
    p.add_argument("--change", default="change_tools")
    p.add_argument("--sampling", default="ask_sampling")
    p.add_argument("--sampling-text", default="fixed sampling answer")
    p.add_argument("--url", help="connect over streamable HTTP instead of starting CMD")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    if bool(a.url) == bool(cmd):
        p.error("give either --url URL or -- CMD [ARGS...]")

    def transport() -> Any:
        if a.url:
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(a.url)
        return stdio_client(StdioServerParameters(command=cmd[0], args=cmd[1:]))

    out: dict[str, Any] = {
        "client": f"python-mcp-{VERSION}",
        "mode": a.mode if MAJOR >= 2 else "legacy(1.x)",
        "transport": "streamable-http" if a.url else "stdio",
    }
    calls = []
    names = []
    for n in (a.progress, a.log, a.change, a.sampling):
        if n and n not in names:
            names.append(n)
    common = dict(
        sampling_callback=make_sampling_callback(a.sampling_text),
        logging_callback=logging_callback,
        message_handler=message_handler,
    )
    try:
        with anyio.fail_after(25):
            if MAJOR >= 2:
                from mcp import Client

                # On 2026-07-28 log messages are opt-in per request (`_meta` logLevel).
                async with Client(tapped(transport()), mode=a.mode, log_level="debug", **common) as client:
                    out["protocolVersion"] = client.protocol_version
                    info = client.server_info
                    out["server"] = getattr(info, "name", None)
                    tools = await client.list_tools()
                    out["tools"] = [t.name for t in tools.tools]
                    for n in names:
                        calls.append(await do_call(client.call_tool, n))
                    if a.change:
                        tools = await client.list_tools(cache_mode="bypass") if "cache_mode" in client.list_tools.__code__.co_varnames else await client.list_tools()
                        out["tools_after"] = [t.name for t in tools.tools]
            else:
                from mcp import ClientSession

                async with tapped(transport()) as (read, write):
                    async with ClientSession(read, write, **common) as session:
                        init = await session.initialize()
                        out["protocolVersion"] = init.protocolVersion
                        out["server"] = init.serverInfo.name
                        tools = await session.list_tools()
                        out["tools"] = [t.name for t in tools.tools]
                        for n in names:
                            calls.append(await do_call(session.call_tool, n))
                        if a.change:
                            tools = await session.list_tools()
                            out["tools_after"] = [t.name for t in tools.tools]
        out["ok"] = True
    except BaseException as e:  # report, don't crash without output
        if isinstance(e, BaseExceptionGroup):
            e = e.exceptions[0] if e.exceptions else e
        out["ok"] = False
        out["error"] = f"{type(e).__name__}: {e}"
    out["calls"] = calls
    out["logs"] = state["logs"]
    out["list_changed_total"] = state["list_changed"]
    out["sampling_requests"] = state["sampling_requests"]
    out["wire_methods"] = [d.get("method") or ("response" if "id" in d else d) for d in wire]
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    anyio.run(main)
