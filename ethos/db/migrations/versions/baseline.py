"""The baseline: until ethos's first release, the database ethos/db/schema defines, read
from it (the schema is the one text; no copy of it here), and the word prior seeded from
its list. Its revision is the start of the schema's SHA-256, so a database made from an
earlier schema, or stamped by a migration folded into it, is refused in one line. At the
first release `make baseline FREEZE=1` freezes it: baseline.sql, a copy of the schema
then, named here by its own revision (decision 0025).

Revision ID: the schema's (ethos.db.schema.revision_of)
Revises: none
"""

from ethos.db.migrations import execute_definition, execute_script
from ethos.db.schema import definition, revision_of, word_prior_seed

revision = revision_of(definition())
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_definition(definition())
    execute_script(word_prior_seed())
