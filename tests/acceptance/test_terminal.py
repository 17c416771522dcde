"""A long command as a person runs it in a terminal (tmux: a real tty): a progress line
while it works, Ctrl-C, the line that says how far it got, and the same command again
finishing it; in a pipe, no progress line (issue 66). `make terminal` installs tmux;
without it, this is skipped."""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import asyncpg
import pytest

from tests.acceptance.test_interrupts import BATCH, ETHOS, PRUNE_ALL, ROWS, pruned_rows

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="no tmux (make terminal)")


class Pane:
    """One tmux session on its own server (socket), 160 columns wide."""

    def __init__(self, socket: Path, command: str) -> None:
        self.tmux = [str(TMUX), "-S", str(socket)]
        self.run("new-session", "-d", "-s", "t", "-x", "160", "-y", "40", command)

    def run(self, *args: str) -> str:
        return subprocess.run(
            [*self.tmux, *args], capture_output=True, text=True, check=True, timeout=10
        ).stdout

    def text(self) -> str:
        return self.run("capture-pane", "-p", "-t", "t", "-S", "-100")

    async def shows(self, text: str, within: float = 60) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if text in (shown := self.text()):
                return shown
            await asyncio.sleep(0.05)
        raise AssertionError(f"{text!r} never shown:\n{self.text()}")

    def close(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=10)


@pytest.mark.filled.with_args(pruned_rows)
async def test_a_long_recover_on_a_terminal_shows_progress_stops_and_finishes(
    database_url: str, conn: asyncpg.Connection, tmp_path: Path
) -> None:
    env = f"env ETHOS_DATABASE__URL={shlex.quote(database_url)} ETHOS_DECAY__BATCH_SIZE={BATCH}"
    recover = f"{env} {shlex.quote(ETHOS)} recover episodic_traces --agent a"
    piped = f"{recover} 2> {shlex.quote(str(tmp_path / 'stderr'))} | cat"
    # Stopped, then (Enter) run again, then in a pipe: each with its exit code.
    script = (
        f'{recover}; echo "[exit $?]"; read _; {recover}; echo "[exit $?]"; read _;'
        f' {piped}; echo "[piped]"; sleep 600'
    )
    pane = Pane(tmp_path / "tmux.sock", f"bash -c {shlex.quote(script)}")
    try:
        shown = await pane.shows("[#")  # the progress line, drawn as it goes
        assert re.search(rf"recovered +\[#+\.*\] \d+/{ROWS}", shown), shown
        pane.run("send-keys", "-t", "t", "C-c")
        shown = await pane.shows("[exit 130]")
        live = await conn.fetchval("SELECT count(*) FROM episodic_traces WHERE NOT pruned")
        assert 0 < live < ROWS
        assert f"ethos: interrupted: recovered {live} of {ROWS} episodic_traces rows" in shown
        assert "run the same command again to finish" in shown
        pane.run("send-keys", "-t", "t", "Enter")
        shown = await pane.shows("[exit 0]")
        assert f"recovered {ROWS - live} of {ROWS - live} episodic_traces rows" in shown
        await conn.execute(PRUNE_ALL)
        pane.run("send-keys", "-t", "t", "Enter")
        shown = await pane.shows("[piped]")
        assert f"recovered {ROWS} of {ROWS} episodic_traces rows" in shown
        stderr = (tmp_path / "stderr").read_text()
        assert "\r" not in stderr and "[#" not in stderr  # no progress line off a terminal
    finally:
        pane.close()
