"""Interop peer: the Python `mcp` 2.x client's OAuth flow against a protected MCP server.

usage: oauth_client.py [--mode auto|legacy] [--follow] [--tools a,b] [--scope SCOPE] URL

Connects to URL with `OAuthClientProvider` (discovery from the 401, dynamic registration,
authorization code with PKCE). The "user" is this script: its redirect handler fetches the
authorization URL itself, expects the test authorization server to approve at once with a
302, and hands the code, state and iss from the Location header to the callback handler.
With --follow it instead follows the authorization server's own redirects (login, consent)
with GETs, carrying cookies, until the Location is the redirect URI.
Then it calls `whoami` and `admin` (the latter needs a scope step-up on 403), or the tools
named by --tools, and prints one JSON line: ok, the tool results, and how many times the user
was sent to authorize. --scope sets the scope of the client metadata (the registration, and
the first authorization request if the server's challenge names none).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"  # never connected to: the script reads the Location
MAX_HOPS = 10  # --follow: redirects followed at the authorization server before giving up


def is_redirect_uri(location: str) -> bool:
    u, r = urlparse(location), urlparse(REDIRECT)
    return (u.scheme, u.netloc, u.path) == (r.scheme, r.netloc, r.path)


class Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="auto")
    p.add_argument("--follow", action="store_true", help="follow the authorization server's redirects")
    p.add_argument("--tools", default="whoami,admin", help="comma-separated tools to call")
    p.add_argument("--scope", default=None, help="scope of the client metadata")
    p.add_argument("url")
    a = p.parse_args()
    out: dict[str, Any] = {"client": "python-mcp-oauth", "redirects": 0}
    pending: dict[str, Any] = {}

    async def redirect_handler(url: str) -> None:
        out["redirects"] += 1
        out.setdefault("authorize_scopes", []).append(parse_qs(urlparse(url).query).get("scope", [None])[0])
        if a.follow:
            location = await follow(url)
        else:
            async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
                response = await http.get(url)
            if response.status_code != 302:
                raise RuntimeError(f"authorization answered {response.status_code}: {response.text[:200]}")
            location = response.headers["location"]
        q = parse_qs(urlparse(location).query)
        if "error" in q:
            raise RuntimeError(f"authorization refused: {q['error'][0]} {q.get('error_description', [''])[0]}")
        pending.update({k: v[0] for k, v in q.items()})

    async def follow(url: str) -> str:
        """GETs along the authorization server's redirects, with a cookie jar; the Location
        that points at REDIRECT (never fetched)."""
        hops = []
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
            for _ in range(MAX_HOPS):
                response = await http.get(url)
                hops.append(response.status_code)
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise RuntimeError(f"authorization answered {response.status_code}: {response.text[:200]}")
                location = urljoin(url, location)
                if is_redirect_uri(location):
                    out.setdefault("hops", []).append(hops)
                    return location
                url = location
        raise RuntimeError(f"no redirect to {REDIRECT} after {MAX_HOPS} hops")

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=pending["code"], state=pending.get("state"), iss=pending.get("iss"))

    provider = OAuthClientProvider(
        server_url=a.url,
        client_metadata=OAuthClientMetadata(
            client_name="mcpflow interop (python)",
            redirect_uris=[REDIRECT],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=a.scope,
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    try:
        with anyio.fail_after(40):
            http = create_mcp_http_client(auth=provider)
            async with http:
                async with Client(streamable_http_client(a.url, http_client=http), mode=a.mode) as client:
                    out["protocolVersion"] = client.protocol_version
                    tools = await client.list_tools()
                    out["tools"] = [t.name for t in tools.tools]
                    for name in a.tools.split(","):
                        result = await client.call_tool(name, {})
                        out[name] = "".join(getattr(c, "text", "") for c in result.content)
        out["ok"] = True
    except BaseException as e:  # report, don't crash without output
        while isinstance(e, BaseExceptionGroup) and e.exceptions:
            e = e.exceptions[0]
        out["ok"] = False
        out["error"] = f"{type(e).__name__}: {e}"
    print(json.dumps(out, default=str), flush=True)
    sys.exit(0 if out["ok"] else 1)


if __name__ == "__main__":
    anyio.run(main)
