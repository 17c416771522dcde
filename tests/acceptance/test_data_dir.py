"""Run from another folder, ethos's relative data_dir names a folder of its own: it says
so in one line before making a new, empty embedded database, naming the one used last
and how to point at it (the real `ethos` command, HOME a folder of the test's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ethos import db

pytestmark = pytest.mark.own_server


def ethos(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "XDG_STATE_HOME"}
    return subprocess.run(
        [str(Path(sys.executable).parent / "ethos"), *args],
        env={**env, "HOME": str(home), "ETHOS_LOGGING__LEVEL": "warning"},
        cwd=cwd, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def folders() -> Iterator[tuple[Path, Path, Path]]:
    # Outside pytest's temp root, as conftest's pg_data_dir: the server's own user enters it.
    root = Path(tempfile.mkdtemp(prefix="ethos-test-dirs-"))
    root.chmod(0o755)
    home, first, second = (root / name for name in ("home", "first", "second"))
    for folder in (home, first, second):
        folder.mkdir()
    yield home, first, second
    for folder in (first, second):
        db.stop_embedded(folder / ".ethos" / "pgdata")
    shutil.rmtree(root, ignore_errors=True)


def test_a_new_database_beside_the_last_one_used_is_told(
    folders: tuple[Path, Path, Path],
) -> None:
    home, first, second = folders
    made = ethos("migrate", cwd=first, home=home)
    assert made.returncode == 0, made.stderr
    assert "warning" not in made.stderr
    used = first / ".ethos" / "pgdata"
    again = ethos("stats", cwd=first, home=home)
    assert again.returncode == 0 and "warning" not in again.stderr

    elsewhere = ethos("stats", cwd=second, home=home)
    [told] = [line for line in elsewhere.stderr.splitlines() if "warning" in line]
    assert f"new, empty database in {second / '.ethos' / 'pgdata'}" in told
    assert f"the one used last is {used}" in told
    assert f"ETHOS_DATABASE__DATA_DIR={used}" in told

    # following it reaches the first database, migrated, with no warning
    pointed = ethos("stats", cwd=second, home=home)
    assert "warning" not in pointed.stderr  # the second one exists now: it was used last
    env_run = subprocess.run(
        [str(Path(sys.executable).parent / "ethos"), "migrate"],
        env={**os.environ, "HOME": str(home), "ETHOS_DATABASE__DATA_DIR": str(used)},
        cwd=second, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert "database is at the latest schema" in env_run.stdout, env_run.stderr
