"""Audit rows know their owner: the client process that wrote a `running` sweep or
consolidation row names itself (its connections' application_name), so a later process
can tell that a row left `running` by a killed process is not running any more and mark
it `interrupted`. A partial index finds the running rows without reading the audit.

Revision ID: 0018
Revises: 0016
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0018"
down_revision = "0016"
branch_labels = None
depends_on = None

RUN_TABLES = ("sweep_runs", "consolidation_runs")


def upgrade() -> None:
    for table in RUN_TABLES:
        execute_script(f"""
ALTER TABLE {table} ADD COLUMN owner text;
CREATE INDEX {table}_running_idx ON {table} (id) WHERE status = 'running';
""")


def downgrade() -> None:
    for table in RUN_TABLES:
        execute_script(f"DROP INDEX {table}_running_idx; ALTER TABLE {table} DROP COLUMN owner;")
