"""Writes the baseline migration from ethos/db/schema, and folds the unreleased migrations
into it (decision 0025): `make baseline`.

    python scripts/baseline.py

Until ethos's first release a schema change is an edit of ethos/db/schema and a rerun of
this: versions/baseline.sql becomes a copy of the schema's files in their order,
versions/baseline.py names it by the start of that copy's SHA-256 (a database made from
an earlier baseline is then refused in one line, not taken for this one), and every other
migration in versions/ goes, its change being in the schema already (the schema's
equality test held them equal). Once CHANGELOG.md names a release the baseline is frozen:
this refuses, and a migration named by the next release carries a change.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from ethos.db.migrations import VERSIONS
from ethos.db.schema import definition

CHANGELOG = Path(__file__).resolve().parent.parent / "CHANGELOG.md"
RELEASE = re.compile(r"^## \[?(\d+\.\d+[^\] ]*)", re.MULTILINE)

SQL_HEADER = """\
-- The baseline: ethos/db/schema as `make baseline` (scripts/baseline.py) last copied it,
-- the files in the order ethos/db/schema/__init__.py gives. Not edited by hand: until the
-- first release the schema is edited and this copy written again; from the first release
-- on it is frozen, and a migration named by the release carries a database on
-- (decision 0025).

"""

PY_TEMPLATE = '''\
"""The baseline: the database ethos/db/schema defined when `make baseline` last copied
it (baseline.sql), and the word prior seeded from its list. Written by
scripts/baseline.py: the revision is the start of baseline.sql's SHA-256, so a database
made from an earlier baseline, or stamped by a migration folded into this one, is refused
in one line (decision 0025).

Revision ID: {revision}
Revises: none
"""

from ethos.db.migrations import execute_frozen, execute_script
from ethos.db.schema import word_prior_seed

revision = "{revision}"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("baseline.sql")
    execute_script(word_prior_seed())
'''


def revision_of(sql: str) -> str:
    """The baseline's revision: the start of its SQL's SHA-256."""
    return hashlib.sha256(sql.encode()).hexdigest()[:12]


def released(changelog: str) -> str | None:
    """The first release CHANGELOG.md names, if any ("Unreleased" sections are none)."""
    found = RELEASE.search(changelog)
    return found.group(1) if found else None


def main() -> int:
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
    sql = SQL_HEADER + definition()
    (VERSIONS / "baseline.sql").write_text(sql)
    (VERSIONS / "baseline.py").write_text(PY_TEMPLATE.format(revision=revision_of(sql)))
    print(f"baseline {revision_of(sql)}: {sql.count(chr(10))} lines from ethos/db/schema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
