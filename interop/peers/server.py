"""Interop peer server on the Python `mcp` SDK (works on 2.x and 1.30).

Tools:
  echo(text)         progress (when the request carries a progressToken), an info log, then the text
  change_tools()     adds a tool, sends notifications/tools/list_changed mid-call, then returns
  ask_sampling(prompt)  asks the client for sampling during the call, returns the model's text
Run: python server.py                   (stdio)
     python server.py --http-port PORT   (streamable HTTP on http://127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import warnings

warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

from mcp import types

try:  # mcp 2.x
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as HighLevelServer
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as HighLevelServer

VERSION = importlib.metadata.version("mcp")
MAJOR = int(VERSION.split(".")[0])
server = HighLevelServer(f"interop-py-{VERSION}")
_added = 0


@server.tool(description="Echo the text; reports progress and logs first")
async def echo(text: str, ctx: Context) -> str:
    await ctx.report_progress(1, 2, "echo: halfway")  # no-op without a progressToken
    await ctx.info(f"echo: {text}")
    await ctx.report_progress(2, 2, "echo: done")
    return text


async def _added_tool() -> str:
    return "added"


@server.tool(description="Add a tool and send tools/list_changed during the call")
async def change_tools(ctx: Context) -> str:
    global _added
    _added += 1
    server.add_tool(_added_tool, name=f"added_{_added}", description="added by change_tools")
    # Scoped to this request, so over streamable HTTP it rides the call's own SSE stream
    # (an unscoped notification would go to the GET stream, or nowhere without one).
    changed = types.ToolListChangedNotification()
    await ctx.session.send_notification(changed if MAJOR >= 2 else types.ServerNotification(changed), related_request_id=ctx.request_id)
    return f"added_{_added}"


@server.tool(description="Ask the client for sampling during the call")
async def ask_sampling(prompt: str, ctx: Context) -> str:
    message = types.SamplingMessage.model_validate({"role": "user", "content": {"type": "text", "text": prompt}})
    result = await ctx.session.create_message(messages=[message], max_tokens=50)
    content = result.content
    if isinstance(content, list):
        content = content[0]
    return getattr(content, "text", str(content))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    args = parser.parse_args()
    if args.http_port is None:
        server.run()
    elif MAJOR >= 2:
        server.run("streamable-http", host="127.0.0.1", port=args.http_port)
    else:
        server.settings.host = "127.0.0.1"
        server.settings.port = args.http_port
        server.run("streamable-http")
