"""The door of the HTTP servers, on every bind: no reachable address without a token,
Host and Origin always checked, the token compared whole."""

from __future__ import annotations

from typing import Any

import pytest

from ethos.adapters.door import Door, door_for, guarded
from ethos.domain.errors import ConfigError


def door(host: str, token: str | None = "t0ken-t0ken", **lists: list[str]) -> Door:
    env = "MEMORY_TEST_DOOR_TOKEN"
    with pytest.MonkeyPatch.context() as mp:
        if token is not None:
            mp.setenv(env, token)
        return door_for(
            host,
            tokens={env if token is not None else "": "write"},
            allowed_hosts=lists.get("hosts", []),
            allowed_origins=lists.get("origins", []),
            flag="--http",
            section="mcp",
        )


async def status(gate: Door, **headers: str) -> int:
    """What the guarded app answers to one GET with these headers."""
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "path": "/mcp",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
    }
    await guarded(app, gate)(scope, None, send)  # type: ignore[arg-type]
    return int(sent[0]["status"])


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.5", "::"])
def test_a_reachable_bind_needs_a_token(host: str) -> None:
    with pytest.raises(ConfigError, match="reachable from other machines: set a bearer token"):
        door(host, token=None)


def test_binding_every_address_needs_the_names_clients_use() -> None:
    with pytest.raises(ConfigError, match="needs \\[mcp\\] allowed_hosts"):
        door("0.0.0.0")


async def test_every_bind_checks_host_origin_and_token() -> None:
    auth = {"authorization": "Bearer t0ken-t0ken"}
    everywhere = door("0.0.0.0", hosts=["memory.test:*"], origins=["https://app.test"])
    assert await status(everywhere, host="memory.test:8765", **auth) == 200
    assert await status(everywhere, host="evil.example.com", **auth) == 421
    assert await status(everywhere, host="memory.test:1", origin="https://app.test", **auth) == 200
    assert await status(everywhere, host="memory.test:1", origin="https://evil.test", **auth) == 403
    assert await status(everywhere, host="memory.test:1") == 401
    assert await status(everywhere, host="memory.test:1", authorization="Bearer t0ken") == 401
    one = door("10.0.0.5")
    assert await status(one, host="10.0.0.5:8765", **auth) == 200
    assert await status(one, host="10.0.0.6:8765", **auth) == 421
    local = door("127.0.0.1", token=None)
    assert await status(local, host="127.0.0.1:9") == 200
    assert await status(local, host="evil.example.com") == 421
    assert await status(local, host="localhost:9", origin="http://evil.example.com") == 403


async def test_host_and_port_are_parsed_not_prefixed() -> None:
    """Finding: `Host: localhost:evil.com` passed the "localhost:*" prefix match."""
    local = door("127.0.0.1", token=None)
    assert await status(local, host="localhost:8750") == 200
    assert await status(local, host="[::1]:8750") == 200
    for host in ("localhost:evil.com", "localhost:8750@evil.com", "localhost:*", "local host"):
        assert await status(local, host=host) == 421, host
    assert await status(local, host="127.0.0.1:8750/x") == 421


async def test_only_the_servers_own_origin_or_one_allowed() -> None:
    """Finding: any `http://localhost:*` origin was accepted (another local page could
    drive the API); the server's own origin is that of the Host the page asked for."""
    local = door("127.0.0.1", token=None, origins=["https://app.test"])
    assert await status(local, host="localhost:8750", origin="http://localhost:8750") == 200
    assert await status(local, host="127.0.0.1:8750", origin="http://127.0.0.1:8750") == 200
    assert await status(local, host="localhost:8750", origin="https://app.test") == 200
    for origin in ("http://localhost:3000", "http://127.0.0.1:1", "null",
                   "http://localhost:8750.evil.com", "ftp://localhost:8750"):  # fmt: skip
        assert await status(local, host="localhost:8750", origin=origin) == 403, origin


@pytest.mark.parametrize("token", ["tökén-secret", "two words", "tab\there"])
def test_a_token_no_client_can_send_is_refused_at_start(token: str) -> None:
    """Finding: a non-ASCII token was accepted at start, yet no client can present it."""
    with pytest.raises(ConfigError, match="MEMORY_TEST_DOOR_TOKEN must be printable ASCII"):
        door("127.0.0.1", token=token)
