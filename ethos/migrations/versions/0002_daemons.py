"""Daemon heartbeats, and which daemon ran each sweep.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

UPGRADE = """
CREATE TABLE daemons (
    id               text PRIMARY KEY,
    host             text NOT NULL,
    pid              integer NOT NULL,
    started_at       timestamptz NOT NULL DEFAULT now(),
    heartbeat_at     timestamptz NOT NULL DEFAULT now(),
    stopped_at       timestamptz,
    role             text NOT NULL CHECK (role IN ('starting', 'leader', 'standby')),
    lock_backend_pid integer,
    next_sweep_due   timestamptz,
    ltp_backlog      bigint NOT NULL DEFAULT 0,
    ltp_dropped      bigint NOT NULL DEFAULT 0
);
CREATE INDEX daemons_heartbeat_at_idx ON daemons (heartbeat_at);
ALTER TABLE sweep_runs ADD COLUMN daemon_id text;
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script("ALTER TABLE sweep_runs DROP COLUMN daemon_id; DROP TABLE daemons;")
