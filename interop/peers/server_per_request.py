"""Interop peer server on the Python `mcp` 2.x SDK for 2026-07-28 clients.

The tools of server.py that work without a back-channel, and one that elicits input
the 2026-07-28 way (an `input_required` result, answered on the retry):
  echo(text)       progress (when the request carries a progressToken), an info log, then the text
  change_tools()   adds a tool and announces the list change, then returns
  confirm(action)  asks the client to confirm `action` (elicitation), returns its answer
Run: python server_per_request.py                   (stdio)
     python server_per_request.py --http-port PORT   (streamable HTTP on http://127.0.0.1:PORT/mcp)
"""

from __future__ import annotations

import argparse
import importlib.metadata
import warnings

warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

from mcp import types
from mcp.server.mcpserver import Context
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult, InputRequiredResult

VERSION = importlib.metadata.version("mcp")
server = MCPServer(f"interop-py-per-request-{VERSION}")
_added = 0


@server.tool(description="Echo the text; reports progress and logs first")
async def echo(text: str, ctx: Context) -> str:
    await ctx.report_progress(1, 2, "echo: halfway")
    await ctx.info(f"echo: {text}")
    await ctx.report_progress(2, 2, "echo: done")
    return text


async def _added_tool() -> str:
    return "added"


@server.tool(description="Add a tool and announce the list change")
async def change_tools(ctx: Context) -> str:
    global _added
    _added += 1
    server.add_tool(_added_tool, name=f"added_{_added}", description="added by change_tools")
    await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
    return f"added_{_added}"


@server.tool(description="Ask the client to confirm an action (elicitation through input_required)")
async def confirm(action: str, ctx: Context) -> str | InputRequiredResult:
    answer = (ctx.input_responses or {}).get("confirm")
    if answer is None:
        ask = ElicitRequest(
            params=ElicitRequestFormParams(
                message=f"Confirm {action}?",
                requested_schema={"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
            )
        )
        return InputRequiredResult(input_requests={"confirm": ask}, request_state=f"confirm:{action}")
    result = answer if isinstance(answer, ElicitResult) else ElicitResult.model_validate(answer, from_attributes=True)
    if ctx.request_state != f"confirm:{action}":
        return f"bad state {ctx.request_state!r}"
    return f"{result.action} {(result.content or {}).get('ok')}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http-port", type=int, help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio")
    args = parser.parse_args()
    if args.http_port is None:
        server.run()
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.http_port)
