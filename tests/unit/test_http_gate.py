"""The HTTP server's door and mem0's owners, pure: who may read or write, and which
ethos agent a mem0 request names."""

from __future__ import annotations

import json

import pytest

from ethos.adapters.door import MAX_DETAIL, Door
from ethos.adapters.http import named
from ethos.adapters.http.access import problem, server_door
from ethos.domain.errors import InputError
from ethos.settings import Settings

HOST = {"host": "127.0.0.1:8750"}
REFUSED = {
    401: "a valid bearer token is required",
    403: "requests from that Origin are not allowed",
    421: "this server does not answer for that Host",
}


def gate(monkeypatch: pytest.MonkeyPatch, **server: object) -> Door:
    monkeypatch.setenv("T_WRITE", "writer-token")
    monkeypatch.setenv("T_READ", "reader-token")
    settings = Settings.model_validate({"server": {"read_token_env": "T_READ", **server}})
    return server_door(settings, "127.0.0.1", "T_WRITE")


def bearer(token: str) -> dict[str, str]:
    return HOST | {"authorization": f"Bearer {token}"}


def test_each_token_opens_its_own_door(monkeypatch: pytest.MonkeyPatch) -> None:
    g = gate(monkeypatch)
    assert g.admit(bearer("writer-token"), "/memories") == ("write", None)
    assert g.admit(bearer("reader-token"), "/memories") == ("read", None)
    assert g.admit(bearer("guess"), "/memories") == (None, (401, REFUSED[401]))
    assert g.admit(HOST, "/static/app.js") == ("none", None)  # the dashboard's files
    assert g.admit(HOST, "/") == ("none", None)
    assert g.admit({"host": "evil.example:8750"}, "/")[1] == (421, REFUSED[421])
    foreign = bearer("writer-token") | {"origin": "http://evil.example"}
    assert g.admit(foreign, "/memories")[1] == (403, REFUSED[403])
    own = bearer("writer-token") | {"origin": "http://127.0.0.1:8750"}
    assert g.admit(own, "/memories") == ("write", None)


def test_read_only_turns_every_door_into_a_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    assert gate(monkeypatch, read_only=True).admit(bearer("writer-token"), "/x") == ("read", None)


def test_owners_the_first_identifier_names_the_agent() -> None:
    both = named({"agent_id": "bot", "user_id": "alice"})
    assert (both.agent, dict(both.ids)) == ("alice", {"user_id": "alice", "agent_id": "bot"})
    given = named({}, {"AND": [{"run_id": "r1"}, {"agent_id": "bot"}]})
    assert (given.agent, dict(given.ids)) == ("bot", {"agent_id": "bot", "run_id": "r1"})
    with pytest.raises(InputError, match="every alternative of an OR names the same first"):
        named({}, {"OR": [{"user_id": "a"}, {"user_id": "b"}]})  # two agents' memories
    with pytest.raises(InputError, match="give user_id, agent_id or run_id"):
        named({"user_id": ""})


def test_owners_combine_as_an_and() -> None:
    """Top-level owners and those of filters all hold; one owner named twice is one
    value (finding: a conflict was resolved silently, one or the other winning)."""
    owners = named({"user_id": "u"}, {"agent_id": "a"})
    assert dict(owners.ids) == {"user_id": "u", "agent_id": "a"}
    with pytest.raises(InputError, match="user_id is both 'u' and 'v': a memory has one"):
        named({"user_id": "u"}, {"user_id": "v"})
    with pytest.raises(InputError, match="run_id is both"):
        named({}, {"AND": [{"run_id": "r1"}, {"run_id": "r2"}]})
    assert owners.agent == "u"  # the first owner is the ethos agent
    # each owner is a text PostgreSQL can hold (a NUL in a run_id was a 500, found by
    # test_http_fuzz: the owners are matched in jsonb)
    for bad in ("r\x00", "\ud800", 7):
        with pytest.raises(InputError, match="run_id"):
            named({"user_id": "u"}, {"run_id": bad})


def test_a_problem_detail_is_one_short_line_whatever_it_echoes() -> None:
    response = problem(400, "bad id '" + "x" * 10_000 + "'\nmore", "/ethos/forget")
    detail = json.loads(response.body)["detail"]
    assert len(detail) == MAX_DETAIL and "\n" not in detail


def test_filters_metadata_and_or_as_alternatives() -> None:
    """mem0's metadata equalities and OR: an OR of terms (owners, metadata) the store
    matches in SQL; the owners every term holds are the request's."""
    either = {"OR": [{"agent_id": "cook"}, {"metadata": {"diet": "vegan"}}]}
    owners = named({"user_id": "u"}, either)
    assert dict(owners.ids) == {"user_id": "u"} and not owners.only_owners
    assert owners.matching() == [
        {"owners": {"user_id": "u", "agent_id": "cook"}, "metadata": {}},
        {"owners": {"user_id": "u"}, "metadata": {"diet": "vegan"}},
    ]
    assert named({"user_id": "u"}, {"agent_id": "a"}).only_owners
    with pytest.raises(InputError, match="metadata diet is both 'a' and 'b'"):
        named({"user_id": "u"}, {"AND": [{"metadata": {"diet": "a"}}, {"metadata": {"diet": "b"}}]})
    with pytest.raises(InputError, match="filter metadata 'n': mem0's operators and \\* are not"):
        named({"user_id": "u"}, {"metadata": {"n": {"gte": 3}}})  # not matched as containment
    with pytest.raises(InputError, match="filter 'agent_id': mem0's operators"):
        named({"user_id": "u"}, {"agent_id": "*"})  # mem0's any: not an agent named *
    with pytest.raises(InputError, match="filter 'metadata' is not supported"):
        named({"user_id": "u"}, {"metadata": {"mem0": {"user_id": "v"}}})  # owners are owners
    with pytest.raises(InputError, match="over 64 alternatives"):
        named(
            {"user_id": "u"},
            {
                "AND": [
                    {"OR": [{"run_id": str(i)} for i in range(9)]},
                    {"OR": [{"agent_id": str(i)} for i in range(8)]},
                ]
            },
        )
    runs = [{"OR": [{"run_id": "1"}, {"run_id": "2"}]}, {"OR": [{"run_id": "2"}, {"run_id": "3"}]}]
    assert dict(named({"user_id": "u"}, {"AND": runs}).ids) == {"user_id": "u", "run_id": "2"}
