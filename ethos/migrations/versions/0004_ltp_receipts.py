"""Receipts of applied LTP flushes, so that a flush retried after an in-doubt commit
(the connection lost while COMMIT was under way) is not applied twice.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script(
        """
        CREATE TABLE ltp_flushes (
            id         uuid PRIMARY KEY,
            applied_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX ltp_flushes_applied_at_idx ON ltp_flushes (applied_at);
        """
    )


def downgrade() -> None:
    execute_script("DROP TABLE ltp_flushes;")
