"""A sweep asked for through the API says so in its audit row: `sweep_runs.trigger` also
takes 'api', as `consolidation_runs.trigger` does (0009), so every audit row names its
caller the same way (the CLI 'manual', the daemon 'daemon', the Python API 'api').

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_script("""
ALTER TABLE sweep_runs DROP CONSTRAINT sweep_runs_trigger_check,
    ADD CONSTRAINT sweep_runs_trigger_check CHECK (trigger IN ('manual', 'daemon', 'api'));
""")


def downgrade() -> None:
    execute_script("""
UPDATE sweep_runs SET trigger = 'manual' WHERE trigger = 'api';
ALTER TABLE sweep_runs DROP CONSTRAINT sweep_runs_trigger_check,
    ADD CONSTRAINT sweep_runs_trigger_check CHECK (trigger IN ('manual', 'daemon'));
""")
