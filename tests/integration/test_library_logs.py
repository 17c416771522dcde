"""ethos used as a library, in a program that configures no logging: it prints nothing.
Its events still reach the standard logging module, for a program that does."""

from __future__ import annotations

import asyncio
import sys

# A LangGraph user's program: a put, a get (a retrieval, applied later by LTP) and a
# delete of the item, then the store closed (the retrieval of a forgotten item is
# skipped, with a warning event).
PROGRAM = """
import logging, sys
from ethos.adapters.langgraph import EthosStore
from ethos.settings import DatabaseSettings, Settings

if sys.argv[2] == "configured":
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
with EthosStore(Settings(database=DatabaseSettings(url=sys.argv[1]))) as store:
    store.put(("users", "ada"), "tea", {"text": "Ada prefers green tea"})
    assert store.get(("users", "ada"), "tea") is not None
    store.delete(("users", "ada"), "tea")
print("done")
"""


async def run(database_url: str, logging: str) -> tuple[str, str]:
    program = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROGRAM, database_url, logging,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await program.communicate()
    assert program.returncode == 0, stderr.decode()
    return stdout.decode(), stderr.decode()


async def test_a_library_user_who_configures_no_logging_sees_nothing(database_url: str) -> None:
    assert await run(database_url, "unconfigured") == ("done\n", "")


async def test_a_library_user_who_configures_logging_gets_the_events(database_url: str) -> None:
    _, stderr = await run(database_url, "configured")
    assert "ethos.services.ltp ltp_skipped" in stderr
