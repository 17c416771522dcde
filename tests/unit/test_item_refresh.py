"""When a read moves an item's expiry (LangGraph's refresh_ttl): where the move exceeds
1% of its ttl."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ethos.services.engine.items import needs_refresh

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def test_a_read_moves_the_expiry_by_more_than_a_hundredth_of_the_ttl() -> None:
    hour = 60.0  # minutes
    assert not needs_refresh(NOW + timedelta(minutes=59.5), hour, NOW)  # 30 s < 36 s
    assert needs_refresh(NOW + timedelta(minutes=59.3), hour, NOW)  # 42 s
    assert needs_refresh(None, hour, NOW)
    assert not needs_refresh(NOW, None, NOW)  # put without a ttl: never expires
    # a short ttl moves on almost every read: 1.2 s, read 0.6 s after the last move
    assert needs_refresh(NOW + timedelta(seconds=0.6), 0.02, NOW)
    assert not needs_refresh(NOW + timedelta(seconds=1.19), 0.02, NOW)
