"""Folds the unreleased migrations into the baseline, and at the first release freezes it
(decision 0025): `make baseline`, `make baseline FREEZE=1`.

    python scripts/baseline.py [--freeze]

Until ethos's first release the baseline reads ethos/db/schema itself (versions/
baseline.py), so a schema change is an edit of the schema alone; this deletes every other
migration in versions/, its change being in the schema already (the schema's equality
test held them equal). With --freeze, at the release, versions/baseline.sql becomes a copy
of the schema's files in their order and versions/baseline.py runs that copy, named by
the start of its SHA-256. Once CHANGELOG.md names a release the baseline is frozen: this
refuses, and a migration named by the next release carries a change.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ethos.db.migrations import VERSIONS
from ethos.db.schema import definition, revision_of

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
RELEASE = re.compile(r"^## \[?(\d+\.\d+[^\] ]*)", re.MULTILINE)

SQL_HEADER = """\
-- The baseline: ethos/db/schema as `make baseline FREEZE=1` (scripts/baseline.py) copied
-- it at the first release, the files in the order ethos/db/schema/__init__.py gives.
-- Frozen: a migration named by a later release carries a database on (decision 0025).

"""

PY_TEMPLATE = '''\
"""The baseline: the database ethos/db/schema defined at the first release (baseline.sql,
frozen by scripts/baseline.py --freeze), and the word prior seeded from its list. The
revision is the start of baseline.sql's SHA-256 (decision 0025).

Revision ID: {revision}
Revises: none
"""

from ethos.db.migrations import VERSIONS, execute_definition, execute_script
from ethos.db.schema import word_prior_seed

revision = "{revision}"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_definition((VERSIONS / "baseline.sql").read_text())
    execute_script(word_prior_seed())
'''


def released(changelog: str) -> str | None:
    """The first release CHANGELOG.md names, if any ("Unreleased" sections are none)."""
    found = RELEASE.search(changelog)
    return found.group(1) if found else None


def main(freeze: bool) -> int:
    release = released(CHANGELOG.read_text())
    if release is not None:
        print(
            f"ethos {release} was released: its baseline is frozen; carry the change in a"
            " migration named by the next release (decision 0025)",
            file=sys.stderr,
        )
        return 1
    for folded in sorted(VERSIONS.glob("[0-9]*.py")):
        for path in (folded, folded.with_suffix(".sql")):
            path.unlink(missing_ok=True)
        print(f"folded into the baseline: {folded.stem}")
    if freeze:
        sql = SQL_HEADER + definition()
        (VERSIONS / "baseline.sql").write_text(sql)
        (VERSIONS / "baseline.py").write_text(PY_TEMPLATE.format(revision=revision_of(sql)))
        print(f"baseline {revision_of(sql)} frozen: {sql.count(chr(10))} lines of the schema")
    else:
        print(f"baseline {revision_of(definition())}: ethos/db/schema as it is")
    return 0


if __name__ == "__main__":
    sys.exit(main(freeze=sys.argv[1:] == ["--freeze"]))
