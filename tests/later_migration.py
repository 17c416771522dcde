"""A migration after the baseline that only a test carries: written to a versions folder
of its own, run with the package's by Alembic as `ethos migrate` runs them. With none
after the baseline in the package (decision 0025), the tests of what a later migration
does (the schema's equality check, a migration on a distributed database) write one,
named as a release's would be."""

from __future__ import annotations

import os
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from ethos import db
from ethos.db.migrations import VERSIONS
from ethos.settings import Settings

REVISION = "00.01.00_01"  # the first of a release 0.1.0's migrations

TEMPLATE = """\
from ethos.db.migrations import execute_script

revision = {revision!r}
down_revision = {base!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script({sql!r})
"""


def migrate_later(
    settings: Settings, url: str, folder: Path, sql: str, *, from_baseline: bool = False
) -> None:
    """db.migrate to the head, with a migration `sql` after the baseline (in `folder`)."""
    config = db.alembic_config(settings, url)
    assert isinstance(config, Config)
    base = ScriptDirectory.from_config(config).get_base()
    (folder / f"{REVISION}_later.py").write_text(
        TEMPLATE.format(revision=REVISION, base=base, sql=sql)
    )
    config.set_main_option("path_separator", "os")
    config.set_main_option("version_locations", os.pathsep.join([str(VERSIONS), str(folder)]))
    config.attributes["from_baseline"] = from_baseline
    command.upgrade(config, "head")
