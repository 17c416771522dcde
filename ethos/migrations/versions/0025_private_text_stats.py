"""The term statistics are written only by their triggers: the functions that change
them (add counts, rebuild, analyze) run with their owner's rights, and were executable
by PUBLIC, so any role that could connect (an agent role under row-level security
included) could add counts for any agent, skewing its recall and its automatic
importance, or force a rebuild of every agent's statistics. Now the two trigger
functions that call them run as their owner (SECURITY DEFINER, a fixed search_path),
and no role but the owner may call the three directly. A trigger function cannot be
called on its own, so writing memories stays the only way to change the statistics.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-24
"""

from ethos.migrations import execute_script

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

TRIGGERS = ("ethos_text_stats_changed()", "ethos_text_stats_updated()")
WRITERS = (
    "ethos_text_stats_add(text[], tsvector[], integer[])",
    "ethos_text_stats_rebuild()",
    "ethos_text_stats_analyze()",
)


def upgrade() -> None:
    execute_script(
        "".join(
            f"ALTER FUNCTION {f} SECURITY DEFINER SET search_path FROM CURRENT;\n" for f in TRIGGERS
        )
        + "".join(f"REVOKE EXECUTE ON FUNCTION {f} FROM PUBLIC;\n" for f in WRITERS)
    )


def downgrade() -> None:
    execute_script(
        "".join(f"GRANT EXECUTE ON FUNCTION {f} TO PUBLIC;\n" for f in WRITERS)
        + "".join(f"ALTER FUNCTION {f} SECURITY INVOKER RESET search_path;\n" for f in TRIGGERS)
    )
