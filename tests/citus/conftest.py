"""The Citus cluster the Citus tests run on (issue 40): `make citus` installs Citus and
pgvector for Debian's PostgreSQL 15 and starts a coordinator and two workers on localhost
(scripts/citus.sh), writing the coordinator's URL to /tmp/ethos-citus/url.

`citus_url` is that URL: CITUS_URL if set, else the file (CITUS_DIR/url, CITUS_DIR
being /tmp/ethos-citus unless set). The tests using it are skipped, saying why, when no
cluster answers there. `citus_database` is a fresh database of its own on every node
(both extensions, the workers joined), dropped after the test; `cluster_copy(template)`
one copied from a template (cluster.Template: migrated, distributed, with memories, on
one server to hold a distributed one's results to), made once a session.

The Citus tests run on one pytest-xdist worker (tests/conftest.py's scheduler): each
worker would make the templates again."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack

import asyncpg
import pytest

from tests.citus.cluster import BARE, Copy, Template, Templates, configured_url


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # (a conftest's hook sees the whole session's items)
    # The first test to copy a template waits while it is made: a minute or two.
    for item in items:
        if item.path.parent.name == "citus":
            item.add_marker(pytest.mark.timeout(600))


@pytest.fixture(scope="session")
async def templates(citus_url: str) -> AsyncIterator[Templates]:
    made = Templates(citus_url, os.environ.get("PYTEST_XDIST_WORKER", "main"))
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def cluster_copy(templates: Templates) -> AsyncIterator[Copy]:
    """cluster_copy(template): the URL of a database of the test's own on every node, a
    copy of `template`, dropped after the test."""
    async with AsyncExitStack() as stack:

        async def copy(template: Template) -> str:
            return await stack.enter_async_context(templates.copy(template))

        yield copy


@pytest.fixture
async def citus_database(cluster_copy: Copy) -> str:
    """A fresh Citus database of the test's own; its URL."""
    return await cluster_copy(BARE)
