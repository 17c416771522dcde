"""What a user gets from a plain `pip install` (not editable): the wheel, built and
installed with every extra into a new virtualenv, runs the CLI, migrates an embedded
database, serves MCP and imports the LangGraph store. Every other test runs on the
editable install, which would not notice a module left out of the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[2]
EXTRAS = "mcp,langgraph,metrics,plot,server"
# Building and installing take most of pyproject.toml's 120 s on two busy cores (the
# module's fixture counts in its one test's time): a slow disk, not a hang.
pytestmark = pytest.mark.timeout(300)


def run(*args: str | Path, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd
    )
    assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed() -> Iterator[Path]:
    """The bin/ folder of a new virtualenv holding the wheel with every extra."""
    # Outside pytest's temp root, which another pytest session may make unreadable to
    # the embedded server's own user.
    root = Path(tempfile.mkdtemp(prefix="ethos-wheel-"))
    root.chmod(0o755)
    try:
        # From a copy of the tracked files: a build/ folder left in the tree by an earlier
        # build would hand setuptools modules the package list no longer names.
        source = root / "source"
        for name in run("git", "-C", ROOT, "ls-files").splitlines():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name, follow_symlinks=False)
        run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", root / "dist", source)
        [wheel] = (root / "dist").glob("ethos-*.whl")
        # This pip installs into the new environment (ensurepip's own copy costs seconds),
        # no .pyc compiled ahead for the hundreds of modules of the extras' dependencies.
        run(sys.executable, "-m", "venv", "--without-pip", root / "venv")
        bin_dir = root / "venv" / "bin"
        run(
            sys.executable, "-m", "pip", "--python", bin_dir / "python", "install", "-q",
            "--no-compile", f"ethos[{EXTRAS}] @ {wheel.as_uri()}",
        )  # fmt: skip
        yield bin_dir
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    data = Path(tempfile.mkdtemp(prefix="ethos-wheel-db-"))
    data.chmod(0o755)
    yield data
    shutil.rmtree(data, ignore_errors=True)


async def test_the_installed_wheel_runs_migrates_serves_mcp_and_ships_langgraph_and_the_dashboard(
    installed: Path, data_dir: Path
) -> None:
    data = data_dir
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ETHOS_")},
        "ETHOS_DATABASE__DATA_DIR": str(data / "pgdata"),
    }
    ethos = installed / "ethos"
    try:
        assert "migrate" in run(ethos, "--help", env=env, cwd=data)
        run(ethos, "migrate", env=env, cwd=data)
        server = StdioServerParameters(command=str(ethos), args=["mcp"], env=env, cwd=data)
        async with Client(server, read_timeout_seconds=60) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"remember", "recall", "stats"} <= tools
        run(
            installed / "python",
            "-c",
            "from ethos.adapters.langgraph import AsyncEthosStore, EthosStore",
            env=env,
            cwd=data,  # not the source tree, which `python -c` would import from
        )
        files = "from ethos.adapters.http import DASHBOARD; print(*sorted(DASHBOARD.iterdir()))"
        shipped = run(installed / "python", "-c", files, env=env, cwd=data).split()
        assert [Path(f).name for f in shipped] == ["app.js", "index.html", "style.css"]
        where = run(
            installed / "python", "-c", "import ethos; print(ethos.__file__)", env=env, cwd=data
        )
        assert where.startswith(str(installed.parent))
    finally:
        run(ethos, "db", "stop", env=env, cwd=data)
