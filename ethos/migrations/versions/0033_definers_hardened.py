"""The functions that run with their owner's rights are the owner's to attach, and search
the caller's temporary schema last.

A review found two ways through them:
- the trigger functions of 0022, 0025, 0030 and 0032 were executable by PUBLIC, and a role
  may create a trigger with any function it may execute on a temporary table of its own:
  an agent role could so run the statistics triggers, which read every agent's counts, or
  ethos_tier_by_vector, which writes where its NEW row says, as the owner. EXECUTE on them
  is PUBLIC's no more; a trigger on the memory tables still fires whoever writes (the
  right is checked when a trigger is created, not when it fires);
- every one of them set its search_path from the migration's ('$user', public), which
  leaves the session's temporary schema first: a temporary table or view of the caller's
  named like one they read would be read, or run, with the owner's rights. pg_temp is now
  last.

Revision ID: 0033
Revises: 0032
Create Date: 2026-11-25
"""

from ethos.migrations import execute_script

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

DEFINERS = (
    "ethos_agents_of(text)",
    "ethos_text_stats_add(text[], tsvector[], integer[])",
    "ethos_text_stats_analyze()",
    "ethos_text_stats_rebuild()",
    "ethos_vector_stats_add(text[], vector[], integer)",
    "ethos_vector_stats_rebuild()",
)
DEFINER_TRIGGERS = (
    "ethos_drop_revisions()",
    "ethos_keep_revision()",
    "ethos_text_stats_changed()",
    "ethos_text_stats_updated()",
    "ethos_tier_by_vector()",
    "ethos_vector_stats_changed()",
    "ethos_vector_stats_updated()",
)
# The migration's path with pg_temp last, for the ALTERs; then the path as it was, as the
# migrations after this one run in the same transaction on a new database.
TEMP_LAST = (
    "SELECT set_config('ethos.migration_path', current_setting('search_path'), true),"
    " set_config('search_path', current_setting('search_path') || ', pg_temp', true);\n"
)
PATH_BACK = "SELECT set_config('search_path', current_setting('ethos.migration_path'), true);\n"


def _search_paths() -> str:
    """Each definer's search_path set to the migration's own (pg_temp last, or not)."""
    return "".join(
        f"ALTER FUNCTION {f} SET search_path FROM CURRENT;\n"
        for f in (*DEFINERS, *DEFINER_TRIGGERS)
    )


def upgrade() -> None:
    execute_script(
        TEMP_LAST
        + _search_paths()
        + "".join(f"REVOKE EXECUTE ON FUNCTION {f} FROM PUBLIC;\n" for f in DEFINER_TRIGGERS)
        + PATH_BACK
    )


def downgrade() -> None:
    execute_script(
        "".join(f"GRANT EXECUTE ON FUNCTION {f} TO PUBLIC;\n" for f in DEFINER_TRIGGERS)
        + _search_paths()
    )
