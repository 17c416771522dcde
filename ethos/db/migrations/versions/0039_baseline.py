"""The baseline: the database as migrations 0001 to 0039 had built it (2026-11-26),
frozen as pg_dump printed it (0039_baseline.sql). Nothing was released before it, so the
earlier migrations went; a database at 0039 is adopted as it is, and one at an earlier
revision is refused in one line (ethos.db.migrations.check_revision).

Revision ID: 0039
Revises: none
Create Date: 2026-11-26
"""

from ethos.db.migrations import execute_frozen

revision = "0039"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0039_baseline.sql")
