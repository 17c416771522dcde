"""The Citus cluster the Citus tests run on (issue 40): `make citus` installs Citus and
pgvector for Debian's PostgreSQL 15 and starts a coordinator and two workers on localhost
(scripts/citus.sh), writing the coordinator's URL to /tmp/ethos-citus/url.

`citus_url` is that URL: CITUS_URL if set, else the file (CITUS_DIR/url, CITUS_DIR
being /tmp/ethos-citus unless set). The tests using it are skipped, saying why, when no
cluster answers there. `citus_database` is a fresh database of its own on every node
(both extensions, the workers joined), dropped after the test; `single` another, whose
tables stay the coordinator's own: one server, to hold the distributed one's results to."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import asyncpg
import pytest

from tests.citus.cluster import configured_url, fresh_database


async def _active_workers(url: str) -> int:
    conn = await asyncpg.connect(url, timeout=5)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM citus_get_active_worker_nodes()"))
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def citus_url() -> str:
    url, source = configured_url()
    if url is None:
        pytest.skip(f"no Citus cluster: {source} (`make citus` starts one, as root)")
    try:
        workers = asyncio.run(_active_workers(url))
    except (OSError, asyncpg.PostgresError, TimeoutError) as exc:
        pytest.skip(f"no Citus cluster answers at {url} (from {source}): {exc!r}; `make citus`")
    if workers < 1:
        pytest.skip(f"the Citus coordinator at {url} has no active worker; `make citus`")
    return url


@pytest.fixture
async def citus_database(citus_url: str) -> AsyncIterator[str]:
    """A fresh Citus database of the test's own; its URL."""
    async with fresh_database(citus_url, "citus_test") as url:
        yield url


@pytest.fixture
async def single(citus_url: str) -> AsyncIterator[str]:
    """A second database of the cluster, whose tables stay the coordinator's own."""
    async with fresh_database(citus_url, "citus_single") as url:
        yield url
