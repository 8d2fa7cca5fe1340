"""Interop peer client for 2025-11-25 features, on the Python `mcp` SDK (2.x and 1.30).

usage: features.py [--mode auto|legacy] (--url URL | -- CMD [ARGS...])

Declares sampling with tools (answering with a tool_use block) and URL-mode elicitation,
then calls the server's feature tools and prints one JSON line:
  sample_with_tools    the tools offered to the sampling callback, and the tool's text
  needs_authorization  the -32042 error's elicitations, and notifications/elicitation/complete
  list_numbers         the declared outputSchema and structuredContent (the SDK validates it)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
from typing import Any

import anyio
from mcp import StdioServerParameters, types
from mcp.client.stdio import stdio_client

VERSION = importlib.metadata.version("mcp")
MAJOR = int(VERSION.split(".")[0])
try:
    from mcp.shared.exceptions import MCPError as ProtocolError  # 2.x
except ImportError:
    from mcp.shared.exceptions import McpError as ProtocolError  # 1.x

state: dict[str, Any] = {"sampling": [], "elicitations": [], "completed": []}


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def sampling_callback(context: Any, params: types.CreateMessageRequestParams) -> Any:
    state["sampling"].append(dump(params))
    if params.tools:
        return types.CreateMessageResultWithTools.model_validate(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "call-1", "name": params.tools[0].name, "input": {"city": "Paris"}}],
                "model": "interop",
                "stopReason": "toolUse",
            }
        )
    return types.CreateMessageResult.model_validate(
        {"role": "assistant", "content": {"type": "text", "text": "no tools"}, "model": "interop", "stopReason": "endTurn"}
    )


async def elicitation_callback(context: Any, params: Any) -> Any:
    state["elicitations"].append(dump(params))
    return types.ElicitResult(action="accept")


async def message_handler(message: Any) -> None:
    if isinstance(message, Exception):
        return
    inner = getattr(message, "root", message)  # 1.x wraps notifications in ServerNotification
    if getattr(inner, "method", None) == "notifications/elicitation/complete":
        state["completed"].append(dump(inner))


async def call(call_tool: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"tool": name}
    try:
        entry["result"] = dump(await call_tool(name, args))
    except ProtocolError as e:
        error = e.error
        entry["error"] = {"code": error.code, "message": error.message, "data": error.data}
    except Exception as e:  # the SDK's own checks (structured output) raise other types
        entry["exception"] = f"{type(e).__name__}: {e}"
    return entry


PLAN = [("sample_with_tools", {"prompt": "weather in Paris?"}), ("needs_authorization", {}), ("list_numbers", {})]


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="legacy")
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

    callbacks = dict(
        sampling_callback=sampling_callback,
        sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
        elicitation_callback=elicitation_callback,
        message_handler=message_handler,
    )
    out: dict[str, Any] = {"client": f"python-mcp-{VERSION}", "calls": []}
    try:
        with anyio.fail_after(25):
            if MAJOR >= 2:
                from mcp import Client

                async with Client(transport(), mode=a.mode, **callbacks) as client:
                    out["protocolVersion"] = client.protocol_version
                    tools = await client.list_tools()
                    out["outputSchemas"] = {t.name: t.output_schema for t in tools.tools}
                    for name, args in PLAN:
                        out["calls"].append(await call(client.call_tool, name, args))
                    # The completion may trail the error: a ping is answered after it.
                    await client.send_ping()
            else:
                from mcp import ClientSession

                async with transport() as streams:
                    async with ClientSession(streams[0], streams[1], **callbacks) as session:
                        init = await session.initialize()
                        out["protocolVersion"] = init.protocolVersion
                        tools = await session.list_tools()
                        out["outputSchemas"] = {t.name: t.outputSchema for t in tools.tools}
                        for name, args in PLAN:
                            out["calls"].append(await call(session.call_tool, name, args))
                        await session.send_ping()
        out["ok"] = True
    except BaseException as e:  # report, don't crash without output
        if isinstance(e, BaseExceptionGroup):
            e = e.exceptions[0] if e.exceptions else e
        out["ok"] = False
        out["error"] = f"{type(e).__name__}: {e}"
    out.update(state)
    print(json.dumps(out, default=str), flush=True)


if __name__ == "__main__":
    anyio.run(main)
