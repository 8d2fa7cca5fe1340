"""A plain round-robin HTTP load balancer for the fleet cells of the interop matrix.

usage: proxy.py --port PORT BACKEND_URL [BACKEND_URL ...]

Each request (POST, GET, DELETE, any path) goes to the next backend in turn, whatever its
headers say: no stickiness. The answer is streamed back as it arrives (event streams
included), with its status and headers. Prints `proxy listening on PORT` once it accepts
connections. Runs on the Python `mcp` 2.x venv, which brings starlette, uvicorn and httpx2.
"""

from __future__ import annotations

import argparse
import itertools

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

try:  # mcp 2.x depends on httpx2, which keeps httpx's API under its own name
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx

# Hop-by-hop headers (RFC 9110 7.6.1), and the ones httpx and uvicorn set themselves.
SKIP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host", "content-length"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("backends", nargs="+")
    a = p.parse_args()
    turn = itertools.cycle(a.backends)
    client = httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None))

    async def forward(request: Request) -> StreamingResponse:
        backend = next(turn).rstrip("/")
        url = backend.rsplit("/", 1)[0] + request.url.path
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in SKIP]
        upstream = client.build_request(request.method, url, headers=headers, content=await request.body())
        answer = await client.send(upstream, stream=True)
        out_headers = {k: v for k, v in answer.headers.items() if k.lower() not in SKIP}
        return StreamingResponse(
            answer.aiter_raw(),
            status_code=answer.status_code,
            headers=out_headers,
            background=BackgroundTask(answer.aclose),
        )

    app = Starlette(routes=[Route("/{path:path}", forward, methods=["GET", "POST", "DELETE"])])
    print(f"proxy listening on {a.port}", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=a.port, log_level="warning")


if __name__ == "__main__":
    main()
