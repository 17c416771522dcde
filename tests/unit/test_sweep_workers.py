"""A sweep's workers run together and fail together: the first error cancels the rest."""

from __future__ import annotations

import asyncio

import pytest

from ethos.services.sweep import _together


async def test_the_first_failure_cancels_the_other_workers() -> None:
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    async def failing() -> int:
        await asyncio.sleep(0.01)
        raise RuntimeError("batch failed")

    with pytest.raises(RuntimeError, match="batch failed"):
        await asyncio.wait_for(_together([slow(), failing()]), 5)
    assert cancelled.is_set()  # and awaited: its connection is released before the raise


async def test_results_keep_the_order_of_the_workers() -> None:
    async def after(seconds: float, value: int) -> int:
        await asyncio.sleep(seconds)
        return value

    assert await _together([after(0.02, 1), after(0.0, 2), after(0.01, 3)]) == [1, 2, 3]
