"""The HTTP API fuzzed from its own schema: schemathesis generates requests for every
operation of /openapi.json (valid and invalid ones) against the real server on
127.0.0.1; no answer may be a 5xx, and every answer must be what the schema says."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass, field

import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.strategies import SearchStrategy
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.servers import serving

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
# Per operation and generation mode: with the seed fixed, the same requests every run,
# about 1,000 in all (a few seconds of the server's time).
EXAMPLES = 25


@dataclass
class Findings:
    sent: int = 0
    server_errors: int = 0
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        """Each kind of failure once, with how often it came and one answer of it."""
        kinds = Counter(line.partition(" :: ")[0] for line in self.failures)
        first = {line.partition(" :: ")[0]: line for line in reversed(self.failures)}
        return "\n".join(f"{n} × {first[kind]}" for kind, n in kinds.most_common())


def fuzz(base_url: str) -> Findings:
    """Every operation's generated requests sent, each answer checked; what failed."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    found = Findings()
    with requests.Session() as session:
        for result in schema.get_all_operations():
            for mode in schemathesis.GenerationMode:
                strategy = result.ok().as_strategy(generation_mode=mode)
                with contextlib.suppress(Unsatisfiable):  # nothing invalid to send
                    _send_each(strategy, f"({mode.value})", base_url, session, found)
    return found


def _send_each(
    strategy: SearchStrategy[schemathesis.Case],
    mode: str,
    base_url: str,
    session: requests.Session,
    found: Findings,
) -> None:
    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(case=strategy)
    def send(case: schemathesis.Case) -> None:
        response = case.call(base_url=base_url, session=session, timeout=30)
        found.sent += 1
        found.server_errors += response.status_code >= 500
        try:
            case.validate_response(response, checks=CHECKS)
        except FailureGroup as exc:
            titles = "; ".join(sorted({f.title for f in exc.exceptions}))
            found.failures.append(
                f"{case.operation.label} {mode} → {response.status_code}: {titles}"
                f" :: {response.text[:300]}"
            )

    send()


async def test_generated_requests_get_no_5xx_and_answers_match_the_schema(
    database_url: str,
) -> None:
    async with serving("serve", database_url, "127.0.0.1") as port:
        found = await asyncio.to_thread(fuzz, f"http://127.0.0.1:{port}")
    print(f"schemathesis: {found.sent} requests, {found.server_errors} 5xx,"
          f" {len(found.failures)} failed checks")  # fmt: skip
    assert found.sent > 500
    assert not found.failures, found.summary()
