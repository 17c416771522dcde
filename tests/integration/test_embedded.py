"""The embedded server's settings of ethos's: shared_buffers, "auto" or a size."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from ethos import db

BUFFERS_MB = "SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'"


async def buffers_mb(url: str) -> int:
    conn = await asyncpg.connect(url)
    try:
        return int(await conn.fetchval(BUFFERS_MB))
    finally:
        await conn.close()


@pytest.mark.own_server
async def test_the_embedded_server_takes_a_quarter_of_the_memory_by_default(
    admin_uri: str,
) -> None:
    assert await buffers_mb(admin_uri) == db.auto_shared_buffers_mb()
    low, high = db.SHARED_BUFFERS_MB
    assert low <= db.auto_shared_buffers_mb() <= high


async def test_a_size_in_the_settings_applies_when_the_server_starts(tmp_path: Path) -> None:
    data_dir = tmp_path / "pg"
    try:
        url = db.embedded_uri(data_dir, "postgres", shared_buffers="160MB")
        assert await buffers_mb(url) == 160
        db.embedded_uri(data_dir, "postgres", shared_buffers="192MB")
        assert await buffers_mb(url) == 160  # a running server keeps its cache
        db.stop_embedded(data_dir)
        url = db.embedded_uri(data_dir, "postgres", shared_buffers="192MB")
        assert await buffers_mb(url) == 192
        conf = (data_dir / "postgresql.conf").read_text()
        assert conf.count(f"include_if_exists = '{db.EMBEDDED_CONF}'") == 1
        ours = (data_dir / db.EMBEDDED_CONF).stat()
        assert (ours.st_uid, ours.st_mode & 0o777) == (data_dir.stat().st_uid, 0o600)
    finally:
        db.stop_embedded(data_dir)
