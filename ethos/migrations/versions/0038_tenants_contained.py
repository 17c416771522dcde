"""An agent's connection reaches only its own agent's memories, whatever SQL it sends.

A hostile-tenant review (issue 38) got through in five places, closed here:

- a vector's source is a memory of the vector's own agent: ethos_vector_follows_source
  refuses any other on insert and on a change of source, and the triggers that write
  through a vector (the source's tier, a pruned source's vectors) also match agent_id;
- counters stay where arithmetic holds: retrieval, surfaced, useful and wrong counts
  at most 10^9 (an agent that set its count to 2^31 - 1 made every drain batch fail);
  LTP saturates there;
- moments written by UPDATE are held to the window inserts already are (1900..2199):
  an anchor at 'infinity' made listings fail. An agent's own connection (row-level
  security on) may not add a memory anchored more than 5 minutes ahead, nor one whose
  content is empty, blank or over 256 KiB (what inputs.py refuses for the front ends);
- a duplicate is the same text as a reader sees it (ethos_content_key: NFKC, case
  folded, unseen characters dropped): "Straße", "STRASSE" and their NFD, no-break-space
  and zero-width variants were different memories; plain SQL gets the agent-id checks
  of the front ends (NFC, nothing that does not show);
- a memory's revisions keep the metadata an update replaced, beside the text (the
  history of a memory showed a text replaced, never its metadata);
- queued retrievals set aside keep how many they stood for (`n`), which the drain and
  the in-process flush write when the database refuses one memory's events for good:
  the rest of the batch is applied;
- an agent role learns which agents it speaks for from ethos_own_agents(), which asks
  about the caller only, in place of ethos_agents_of(role), which answered for any
  role; ethos_memory_is_visible(table, id) is what the queue's row policy asks; the
  hint trigger runs as the owner, so agent roles need no INSERT on the sweep's
  schedule (where they could list any ids), and is no longer PUBLIC's to attach.

Revision ID: 0038
Revises: 0037
Create Date: 2026-11-26
"""

import importlib

from alembic import op

from ethos.migrations import branches, earlier_function, execute_script

revision = "0038"
down_revision = "0037"
branch_labels = None
depends_on = None

TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")
COUNTERS = ("retrieval_count", "surfaced_count", "useful_count", "wrong_count")
MOMENTS = ("created_at", "anchor_at", "last_retrieved_at", "expires_at")
COUNT_CAP = 1_000_000_000
EARLIEST, LATEST = "'1900-01-01 00:00+00'", "'2200-01-01 00:00+00'"
# Characters that do not show: Unicode's format characters (Cf, Unicode 14), and every
# space, as regular-expression classes (inputs.py refuses the same by category).
UNSEEN = (
    r"\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
    r"\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    r"\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
    r"\U000e0020-\U000e007f"
)
SPACES = r"[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
CONTROLS = r"\u0001-\u001f\u007f-\u009f\u2028\u2029"


def _bounds(table: str) -> str:
    """Clamp what an UPDATE left out of bounds (so nothing is refused on the way in),
    then hold every later write to the same bounds: a CHECK a column, whose name says
    the bound in the one line an error keeps."""
    moments = [m for m in MOMENTS if m != "expires_at" or table != "episodic_traces"]
    clamps = ",\n    ".join(
        [f"{c} = least({c}, {COUNT_CAP})" for c in COUNTERS]
        + [f"{m} = least(greatest({m}, {EARLIEST}), {LATEST}::timestamptz - interval '1 day')"
           for m in moments]
    )  # fmt: skip
    outside = " OR ".join(
        [f"{c} > {COUNT_CAP}" for c in COUNTERS]
        + [f"NOT ({m} >= {EARLIEST} AND {m} < {LATEST})" for m in moments]
    )
    checks = [
        f"ADD CONSTRAINT {table}_{c}_at_most_1e9 CHECK ({c} <= {COUNT_CAP})" for c in COUNTERS
    ] + [
        f"ADD CONSTRAINT {table}_{m}_1900_to_2199 CHECK ({m} >= {EARLIEST} AND {m} < {LATEST})"
        for m in moments
    ]
    constraints = ",\n    ".join(checks)
    return f"""
UPDATE {table} SET
    {clamps}
WHERE {outside};
ALTER TABLE {table}
    {constraints};
"""


UPGRADE = r"""
-- A vector's source is its own agent's: on insert and on any change of its source.
CREATE OR REPLACE FUNCTION ethos_vector_follows_source() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    found boolean;
BEGIN
    IF NEW.source_type = 'episodic_traces' THEN
        found := EXISTS (SELECT 1 FROM episodic_traces
                         WHERE id = NEW.source_id AND agent_id = NEW.agent_id);
    ELSE
        found := EXISTS (SELECT 1 FROM semantic_facts
                         WHERE id = NEW.source_id AND agent_id = NEW.agent_id);
    END IF;
    IF NOT found THEN
        RAISE EXCEPTION 'the vector''s source % % is not a memory of agent %',
            NEW.source_type, NEW.source_id, NEW.agent_id USING ERRCODE = 'foreign_key_violation';
    END IF;
    NEW.policy := 'permanent';
    RETURN NEW;
END
$$;
DROP TRIGGER memory_vectors_follow_source ON memory_vectors;
CREATE TRIGGER memory_vectors_follow_source
    BEFORE INSERT OR UPDATE OF source_type, source_id, agent_id ON memory_vectors
    FOR EACH ROW WHEN (NEW.source_id IS NOT NULL)
    EXECUTE FUNCTION ethos_vector_follows_source();

CREATE OR REPLACE FUNCTION ethos_source_pruned() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_vectors
    SET pruned = NEW.pruned, pruned_at = NEW.pruned_at, prune_reason = NEW.prune_reason
    WHERE source_type = TG_TABLE_NAME AND source_id = NEW.id AND agent_id = NEW.agent_id
      AND pruned <> NEW.pruned;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION ethos_tier_by_vector() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
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
    -- only a source of the vector's own agent, as its insert left it, once
    <TIER>
    RETURN NULL;
END
$$;

-- Content and agent ids the front ends refuse (inputs.py) are refused to plain SQL too
-- (an agent id in NFD beside one in NFC would be two agents that look alike); an agent's own
-- connection (row-level security on) may also not anchor a memory ahead of now (at full
-- strength for decades), where the owner and the app may place memories in simulated
-- time.
CREATE OR REPLACE FUNCTION ethos_content_derived() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.content !~ '[^<SPACES><UNSEEN>]' THEN
        RAISE EXCEPTION 'content must not be empty' USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.agent_id IS NOT NFC NORMALIZED OR NEW.agent_id ~ '[<CONTROLS><UNSEEN>]' THEN
        RAISE EXCEPTION 'agent_id must be in Unicode NFC and hold no character that does not show'
            USING ERRCODE = 'check_violation';
    END IF;
    IF octet_length(NEW.content) > 262144 THEN
        RAISE EXCEPTION 'content is % bytes: at most 262,144 are stored',
            octet_length(NEW.content) USING ERRCODE = 'check_violation';
    END IF;
    -- A vector with no direction in float32 (all zeros, or 1e-30s whose squares vanish):
    -- its cosine to itself is NaN, as to every query (vector_norm, in double, passes it).
    IF TG_TABLE_NAME = 'memory_vectors' AND TG_OP = 'INSERT' THEN
        IF NEW.embedding IS NOT NULL AND (NEW.embedding <=> NEW.embedding) = 'NaN' THEN
            RAISE EXCEPTION 'embedding has no direction: its float32 norm is 0 or infinite'
                USING ERRCODE = 'check_violation';
        END IF;
    END IF;
    -- (the anchor defaults to the creation, filled by a later trigger)
    IF TG_OP = 'INSERT' AND coalesce(NEW.anchor_at, NEW.created_at) > now() + interval '5 minutes'
       AND row_security_active(TG_RELID) THEN
        RAISE EXCEPTION 'a memory of % starts when it is written, not ahead of now',
            coalesce(NEW.anchor_at, NEW.created_at) USING ERRCODE = 'check_violation';
    END IF;
    NEW.content_key := ethos_content_key(NEW.content);
    NEW.content_tsv := ethos_text_vector(ethos_text_config(), NEW.agent_id, NEW.content);
    RETURN NEW;
END
$$;

-- A duplicate is the same text as a reader sees it: compatibility forms (NFKC: a no-break
-- space is a space), case folded (Straße = STRASSE), unseen characters dropped, spaces
-- collapsed and trimmed. ASCII texts keep the key they had.
CREATE OR REPLACE FUNCTION ethos_content_key(content text) RETURNS uuid
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT md5(btrim(regexp_replace(regexp_replace(<FOLD>,
        '[<UNSEEN>]', '', 'g'), '[<SPACES>]+', ' ', 'g'), ' '))::uuid
$$;

ALTER TABLE retrieval_dead_letters ADD COLUMN n integer NOT NULL DEFAULT 1 CHECK (n >= 1);

ALTER TABLE memory_revisions ADD COLUMN metadata jsonb;
CREATE OR REPLACE FUNCTION ethos_keep_revision() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    INSERT INTO memory_revisions (table_name, memory_id, agent_id, content, metadata, revised_by)
    VALUES (TG_TABLE_NAME, OLD.id, OLD.agent_id, OLD.content, OLD.metadata, session_user);
    RETURN NULL;
END
$$;

-- Which agents the calling role speaks for. A view sees the caller as current_user and
-- reads ethos_agent_roles with its owner's rights, so the caller learns its own
-- agents and no one else's.
CREATE VIEW ethos_own_agent_ids AS
    SELECT agent_id FROM ethos_agent_roles WHERE role_name = current_user;
GRANT SELECT ON ethos_own_agent_ids TO PUBLIC;
CREATE FUNCTION ethos_own_agents() RETURNS text[]
LANGUAGE sql STABLE AS $$
    SELECT coalesce(array_agg(agent_id), '{}') FROM ethos_own_agent_ids
$$;

-- Whether the caller may see memory `id` of `table_name` (row-level security decides):
-- what an agent role's retrievals in the queue must name.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT CASE table_name
        WHEN 'memory_vectors' THEN EXISTS (SELECT 1 FROM memory_vectors AS m WHERE m.id = $2)
        WHEN 'episodic_traces' THEN EXISTS (SELECT 1 FROM episodic_traces AS m WHERE m.id = $2)
        WHEN 'semantic_facts' THEN EXISTS (SELECT 1 FROM semantic_facts AS m WHERE m.id = $2)
        ELSE false
    END
$$;

<OWN_POLICIES>
DROP FUNCTION ethos_agents_of(text);

-- The hints of new rows are the engine's schedule: written with the owner's rights, so
-- no agent role needs INSERT on the due tables (where it could list any ids).
ALTER FUNCTION ethos_hint_new_rows() SECURITY DEFINER;
REVOKE EXECUTE ON FUNCTION ethos_hint_new_rows() FROM PUBLIC;
"""

_definers = importlib.import_module("ethos.migrations.versions.0033_definers_hardened")
# The two definers' search path: the migration's own with pg_temp last (as 0033 set it).
DEFINER_PATHS = (
    _definers.TEMP_LAST
    + "ALTER FUNCTION ethos_tier_by_vector() SET search_path FROM CURRENT;\n"
    + "ALTER FUNCTION ethos_keep_revision() SET search_path FROM CURRENT;\n"
    + "REVOKE EXECUTE ON FUNCTION ethos_keep_revision() FROM PUBLIC;\n"
    + "ALTER FUNCTION ethos_hint_new_rows() SET search_path FROM CURRENT;\n"
    + "REVOKE EXECUTE ON FUNCTION ethos_tier_by_vector() FROM PUBLIC;\n"
    + _definers.PATH_BACK
)


REVISIONS = """
DROP TRIGGER {table}_keep_revision ON {table};
CREATE TRIGGER {table}_keep_revision AFTER UPDATE OF {columns} ON {table}
    FOR EACH ROW WHEN ({changed})
    EXECUTE FUNCTION ethos_keep_revision();
"""


def _revisions(columns: tuple[str, ...]) -> str:
    """Each table's revision trigger, kept on a change of `columns`."""
    changed = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in columns)
    return "".join(
        REVISIONS.format(table=table, columns=", ".join(columns), changed=changed)
        for table in TABLES
    )


# The tiering of a vector's source, one static statement a source table (0035's shape),
# now matching the vector's agent.
TIER = """        UPDATE {table}
        SET auto_importance = ethos_importance_raised(auto_importance, p, k),
            auto_particularity = p,
            policy = ethos_importance_tier(ethos_importance_raised(auto_importance, p, k))
        WHERE id = NEW.source_id AND agent_id = NEW.agent_id
          AND auto_importance IS NOT NULL AND auto_particularity IS NULL
          AND NOT pruned AND retrieval_count = 0 AND due_at = '-infinity'
          AND policy = ethos_importance_tier(auto_importance);"""
SOURCES = ("episodic_traces", "semantic_facts")


def _agent_policies(agents: str) -> str:
    """The agent roles' row policies made by an earlier `ethos roles`, on the agents
    `agents` names (the queue's has no agent_id)."""
    own = f"agent_id = ANY ({agents})"
    return f"""
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT tablename FROM pg_policies
             WHERE schemaname = current_schema() AND policyname = 'ethos_agent'
               AND tablename <> 'retrieval_queue'
    LOOP
        EXECUTE format('ALTER POLICY ethos_agent ON %I USING ({own}) WITH CHECK ({own})',
                       p.tablename);
    END LOOP;
END
$$;
"""


# Case folding: PostgreSQL 18's casefold under its Unicode collation; before it, lower()
# (as the database's ctype has it) and ß, which lower() keeps.
FOLDS = {
    True: "casefold(normalize(content, NFKC) COLLATE pg_unicode_fast)",
    False: "replace(lower(normalize(content, NFKC)), 'ß', 'ss')",
}
KEYS = """
UPDATE {table} SET content_key = ethos_content_key(content)
WHERE content_key IS DISTINCT FROM ethos_content_key(content);
"""


def upgrade() -> None:
    version = op.get_bind().exec_driver_sql("SHOW server_version_num").scalar_one()
    functions = (
        UPGRADE.replace("<FOLD>", FOLDS[int(version) >= 180000])
        .replace("<UNSEEN>", UNSEEN)
        .replace("<SPACES>", SPACES)
        .replace("<CONTROLS>", CONTROLS)
        .replace("<OWN_POLICIES>", _agent_policies("ethos_own_agents()"))
        .replace(
            "<TIER>", branches(TIER, {f"NEW.source_type = '{t}'": {"table": t} for t in SOURCES})
        )
    )
    execute_script(
        "".join(_bounds(table) for table in TABLES)
        + functions
        + "".join(KEYS.format(table=table) for table in TABLES)
        + _revisions(("content", "metadata"))
        + DEFINER_PATHS
    )


def downgrade() -> None:
    execute_script(
        "ALTER FUNCTION ethos_hint_new_rows() SECURITY INVOKER RESET search_path;\n"
        "GRANT EXECUTE ON FUNCTION ethos_hint_new_rows() TO PUBLIC;\n"
        + earlier_function("0022_roles", "ethos_agents_of", "UPGRADE")
        + _revisions(("content",))
        + earlier_function("0022_roles", "ethos_keep_revision", "UPGRADE")
        + _agent_policies("ethos_agents_of(current_user)")
        + """
DROP POLICY IF EXISTS ethos_agent ON retrieval_queue;
DROP POLICY IF EXISTS ethos_service ON retrieval_queue;
ALTER TABLE retrieval_queue DISABLE ROW LEVEL SECURITY;
DROP FUNCTION ethos_memory_is_visible(text, uuid);
DROP FUNCTION ethos_own_agents();
DROP VIEW ethos_own_agent_ids;
ALTER TABLE retrieval_dead_letters DROP COLUMN n;
ALTER TABLE memory_revisions DROP COLUMN metadata;
DROP TRIGGER memory_vectors_follow_source ON memory_vectors;
CREATE TRIGGER memory_vectors_follow_source BEFORE INSERT ON memory_vectors
    FOR EACH ROW WHEN (NEW.source_id IS NOT NULL)
    EXECUTE FUNCTION ethos_vector_follows_source();
"""
        + earlier_function("0031_vectors_follow_sources", "ethos_vector_follows_source", "UPGRADE")
        + earlier_function("0031_vectors_follow_sources", "ethos_source_pruned", "UPGRADE")
        + earlier_function("0010_text_search", "ethos_content_derived", "FUNCTIONS")
        + earlier_function("0009_consolidation", "ethos_content_key", "FUNCTIONS")
        + "".join(KEYS.format(table=table) for table in TABLES)
        + "".join(
            f"ALTER TABLE {table} DROP CONSTRAINT {table}_{column}_{bound};\n"
            for table in TABLES
            for column, bound in (
                *((c, "at_most_1e9") for c in COUNTERS),
                *(
                    (m, "1900_to_2199")
                    for m in MOMENTS
                    if m != "expires_at" or table != "episodic_traces"
                ),
            )
        )
    )
    # 0035's tier function, the last its script makes, with 0033's search path.
    functions = importlib.import_module("ethos.migrations.versions.0035_plans_kept")._functions()
    tier = functions[functions.index("CREATE OR REPLACE FUNCTION ethos_tier_by_vector()") :]
    execute_script(_definers.TEMP_LAST + tier + _definers.PATH_BACK)
