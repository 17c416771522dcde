"""The baseline: the database ethos/db/schema defined when `make baseline` last copied
it (baseline.sql), and the word prior seeded from its list. Written by
scripts/baseline.py: the revision is the start of baseline.sql's SHA-256, so a database
made from an earlier baseline, or stamped by a migration folded into this one, is refused
in one line (decision 0025).

Revision ID: fc7298c729ac
Revises: none
"""

from ethos.db.migrations import execute_frozen, execute_script
from ethos.db.schema import word_prior_seed

revision = "fc7298c729ac"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("baseline.sql")
    execute_script(word_prior_seed())
