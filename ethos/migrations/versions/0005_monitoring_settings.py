"""decay_settings keeps what the monitoring views read (the threshold and the at-risk
margin), written when ethos opens; the decay parameters it also held were never read.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

DECAY_COLUMNS = ("base_tau_days", "ltp_multiplier", "max_tau_days", "frequency_weight",
                 "emotional_weight")  # fmt: skip


def upgrade() -> None:
    execute_script(
        "ALTER TABLE decay_settings "
        + ", ".join(f"DROP COLUMN {column}" for column in DECAY_COLUMNS)
    )


def downgrade() -> None:
    execute_script(
        "ALTER TABLE decay_settings "
        + ", ".join(f"ADD COLUMN {column} double precision" for column in DECAY_COLUMNS)
    )
