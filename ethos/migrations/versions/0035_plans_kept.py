"""The insert's triggers plan their statements once a session, not once a write.

An insert of one memory (an add) spent ~0.75 ms of its ~1.2 ms planning the statements of
its triggers, every time (one episode, an agent of 20,000, PostgreSQL 18):
- ethos_hint_new_rows (0034), ethos_check_new_rows (0019) and ethos_text_stats_changed
  (0023) ran their statement through EXECUTE format(...), parsed and planned anew on each
  statement (~320, ~70 and ~40 µs); so did ethos_tier_by_vector (0032) for each vector
  that tiers its source. They are static statements now, one for each table, and the
  dynamic one as before for a table ethos does not ship that attaches them. PL/pgSQL
  compiles a trigger function apart for every table it is attached to and plans a
  statement when it first runs it, so a table only ever plans its own branch, once a
  session. ethos_check_new_rows's condition, a trigger argument until now, is in its
  table's branch.
- ethos_init_decay_state's words query and ethos_text_stats_add's statements take their
  values from the rows. PostgreSQL plans such a statement for the values at hand until a
  plan for any values looks no dearer; for a memory of fewer than ~10 lexemes it never
  did (a constant text's lexemes are counted, a parameter's guessed at 10), so a short
  memory's words query was planned on every insert (~0.3 ms). Both run with
  plan_cache_mode = force_generic_plan: their plans (a key probe a word; a sort of the
  statement's lexemes) are the ones wanted whatever the values.

What every statement does is unchanged.

Revision ID: 0035
Revises: 0034
Create Date: 2026-11-25
"""

import importlib

from ethos.migrations import branches, earlier_function, execute_script

revision = "0035"
down_revision = "0034"
branch_labels = None
depends_on = None

TABLES = ("episodic_traces", "semantic_facts", "memory_vectors")
SOURCES = ("episodic_traces", "semantic_facts")
GENERIC = (
    "ethos_init_decay_state()",
    "ethos_text_stats_add(text[], tsvector[], integer[])",
    "ethos_vector_stats_add(text[], vector[], integer)",
)

_input_window = importlib.import_module("ethos.migrations.versions.0019_input_window")
_definers = importlib.import_module("ethos.migrations.versions.0033_definers_hardened")


def _dynamic(module: str, function: str, script: str = "UPGRADE") -> str:
    """The EXECUTE statement of `function` as the earlier migration `module` wrote it."""
    text = earlier_function(module, function, script)
    start = text.index("EXECUTE format(")
    return text[start : text.index(";\n", start) + 1]


HINT = """        INSERT INTO {table}_due (prune, at, slice, n, ids, places)
        SELECT prune, '-infinity', slice, count(*), array_agg(id), array_agg(place)
        FROM (SELECT g.*,
                     (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500
                         AS part
              FROM (SELECT kind.prune, added.id, at.place, ethos_slice(at.place) AS slice
                    FROM added
                    CROSS JOIN LATERAL (SELECT t.ctid AS place FROM {table} AS t
                                        WHERE t.id = added.id LIMIT 1) AS at
                    CROSS JOIN (VALUES (false), (true)) AS kind (prune)
                    WHERE NOT added.pruned) AS g) AS g
        GROUP BY prune, slice, part;"""

CHECK = """        SELECT id INTO bad FROM new_rows
        WHERE NOT ({check})
        LIMIT 1;"""

# A source's vector is not a text of its own: its source is counted.
STATS = """        SELECT ethos_text_stats_add(array_agg(agent_id){counted},
                                    array_agg(content_tsv){counted},
                                    array_agg({sign}){counted}) AS added,
               count(*) AS n
        INTO written FROM {rows};"""

TIER = """        UPDATE {table}
        SET auto_importance = ethos_importance_raised(auto_importance, p, k),
            auto_particularity = p,
            policy = ethos_importance_tier(ethos_importance_raised(auto_importance, p, k))
        WHERE id = NEW.source_id AND auto_importance IS NOT NULL AND auto_particularity IS NULL
          AND NOT pruned AND retrieval_count = 0 AND due_at = '-infinity'
          AND policy = ethos_importance_tier(auto_importance);"""


def _functions() -> str:
    hint = branches(
        HINT,
        {f"TG_TABLE_NAME = '{t}'": {"table": t} for t in TABLES},
        _dynamic("0034_hints_by_probe", "ethos_hint_new_rows"),
    )
    checks = {t: "\n               AND ".join(_input_window.conditions(t)) for t in TABLES}
    check = branches(
        CHECK,
        {f"TG_TABLE_NAME = '{t}'": {"check": c} for t, c in checks.items()},
        _dynamic("0019_input_window", "ethos_check_new_rows"),  # its argument, the check
    )
    stats = branches(
        STATS,
        {
            f"TG_OP = '{op}' AND TG_TABLE_NAME {test} 'memory_vectors'": {
                "counted": " FILTER (WHERE source_id IS NULL)" if test == "=" else "",
                "sign": sign,
                "rows": rows,
            }
            for op, sign, rows in (("INSERT", 1, "new_rows"), ("DELETE", -1, "old_rows"))
            for test in ("=", "<>")
        },
    )
    tier = branches(TIER, {f"NEW.source_type = '{t}'": {"table": t} for t in SOURCES})
    return f"""
CREATE OR REPLACE FUNCTION ethos_hint_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    {hint}
    RETURN NULL;
END
$$;

-- What every new row must satisfy (a table ethos does not ship: its trigger's argument);
-- the first that does not is named.
CREATE OR REPLACE FUNCTION ethos_check_new_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    bad uuid;
BEGIN
    {check}
    IF bad IS NOT NULL THEN
        RAISE EXCEPTION '%: row % has a moment outside 1900..2199 or an all-zero embedding',
            TG_TABLE_NAME, bad USING ERRCODE = 'check_violation';
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ethos_text_stats_changed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    written record;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        PERFORM ethos_text_stats_rebuild();
        RETURN NULL;
    END IF;
    -- One pass over the rows: their counts added, and how many the statement wrote.
    {stats}
    IF written.n >= 10000 THEN
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ethos_tier_by_vector() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    k float8 := coalesce((SELECT s.auto_importance_particularity FROM ethos_settings AS s), 2);
    p float8;
BEGIN
    IF k = 0 THEN
        RETURN NULL;
    END IF;
    p := ethos_particularity(NEW.agent_id, NEW.embedding);
    IF p IS NULL THEN
        RETURN NULL;
    END IF;
    -- only a source as its insert left it, once
    {tier}
    RETURN NULL;
END
$$;
"""


def _check_triggers(argument: bool) -> str:
    """The check triggers, with 0019's condition as their argument or without one."""
    return "".join(
        f"DROP TRIGGER {t}_check_new_rows ON {t};\n"
        + (
            _input_window.TRIGGER.format(table=t, check=_input_window._check(t))
            if argument
            else _input_window.TRIGGER.replace("'{check}'", "").format(table=t)
        )
        for t in TABLES
    )


def _generic(setting: str) -> str:
    return "".join(f"ALTER FUNCTION {f} {setting};\n" for f in GENERIC)


def upgrade() -> None:
    execute_script(
        _definers.TEMP_LAST
        + _functions()
        + _definers.PATH_BACK
        + _check_triggers(argument=False)
        + _generic("SET plan_cache_mode = force_generic_plan")
    )


def downgrade() -> None:
    execute_script(
        _generic("RESET plan_cache_mode")
        + earlier_function("0034_hints_by_probe", "ethos_hint_new_rows", "UPGRADE")
        + earlier_function("0019_input_window", "ethos_check_new_rows", "UPGRADE")
        + _check_triggers(argument=True)
        + earlier_function("0023_auto_importance", "ethos_text_stats_changed", "UPGRADE")
        + earlier_function("0032_particularity", "ethos_tier_by_vector", "UPGRADE")
        # the two definers as 0033 left them
        + _definers.TEMP_LAST
        + "".join(
            f"ALTER FUNCTION {f} SECURITY DEFINER SET search_path FROM CURRENT;\n"
            for f in ("ethos_text_stats_changed()", "ethos_tier_by_vector()")
        )
        + _definers.PATH_BACK
    )
