"""Automatic importance weighs a memory against its agent's: an answer counts more, and
words count against the length of the agent's memories.

Automatic importance (0023, 0029) weighs a memory by its informative words. Two signals
more are there at write for free:

- Whether it answers. Where an agent keeps a conversation, an answer carries what
  somebody wanted to know: on LoCoMo's conversations a turn that follows a question is
  evidence for a later question 3.3 times as often as one that does not (49% against
  15%), whatever its words. When the agent's previous live memory in the same table (by
  id: the order they were written) holds a question mark ('?', or the full-width '？'),
  the new memory's words count `[importance] auto_answer` times
  (ethos_settings.auto_importance_answer, 4 by default; 1 turns it off), a factor kept in
  its `auto_answer` for `ethos explain` (a column every table the trigger measures
  gets, a table ethos does not ship too). The previous memory is one probe of the agent's
  live index, backwards from the new id. The rows of one statement see the rows it wrote
  before them (the trigger is VOLATILE): a conversation inserted in order gets the
  answers that adds one at a time get.
- How long the agent's memories are. `auto_half`, the informative words that make 0.5,
  held whatever an agent writes: an agent of long turns kept nearly all of them, one of
  short facts lost a plain fact ("My sister Maria moved to Lisbon on 3 May": 6 words) to
  `working` as soon as the half was set for the other. `auto_half` now holds for memories
  of 10 words (an agent not counted yet: its first memories, a first bulk load) and
  scales with the agent's average (agent_text_stats, before the statement):
  ethos_auto_half. Its default goes to 4.25 (LoCoMo's turns average 14.5 words: 6.2).

"The order they were written" is exact now: ethos_uuid_v7 (0001) put the time in
milliseconds and random bits after it, so the rows of one statement, or adds within a
millisecond, had ids in any order. Its 12 bits after the version now hold the fraction
of the millisecond, to the microsecond (RFC 9562's "increased clock precision", as
PostgreSQL 18's uuidv7() does): ids follow the clock that wrote them.

ethos_init_decay_state keeps 0035's generic plans; with no settings row (no engine has
opened the database) it takes the engine's defaults.

Revision ID: 0036
Revises: 0035
Create Date: 2026-11-26
"""

from ethos.migrations import branches, earlier_function, execute_script

revision = "0036"
down_revision = "0035"
branch_labels = None
depends_on = None

TABLES = ("episodic_traces", "semantic_facts", "memory_vectors")

# The agent's last live memory before the new one, by one probe of its (agent_id, id)
# index, whatever the statistics (the trigger's plans are generic, made once a session,
# maybe on an empty table): `agent_id = ... AND id < ...` let a plan walk the (id) index
# back through every other agent's rows since (3,001 rows read for one), and the bounds
# as written here, with sorts allowed, let an empty table's plan sort the agent's rows
# for each new one (a one-agent bulk load quadratic: 8,000 rows in 40 s). Written so,
# in the composite index's order, with sorts off for the trigger (ethos_init_decay_state
# sorts nothing else but the two importance tiers), that probe is the only plan left.
PREVIOUS = """        SELECT ethos_asks(p.content) INTO asked FROM {table} AS p
        WHERE p.agent_id >= NEW.agent_id AND NOT p.pruned
          AND (p.agent_id, p.id) < (NEW.agent_id, NEW.id)
        ORDER BY p.agent_id DESC, p.id DESC LIMIT 1;"""
# The same for a table ethos does not ship.
PREVIOUS_ANY = """EXECUTE format('SELECT ethos_asks(p.content) FROM %I AS p
                        WHERE p.agent_id >= $1 AND NOT p.pruned AND (p.agent_id, p.id) < ($1, $2)
                        ORDER BY p.agent_id DESC, p.id DESC LIMIT 1', TG_TABLE_NAME)
        INTO asked USING NEW.agent_id, NEW.id;"""


def _each_measured_table(change: str) -> str:
    """ALTER TABLE <t> <change> for every table whose rows ethos_init_decay_state
    measures: ethos's three and any other that attaches it (its NEW needs the column)."""
    return f"""
DO $$
DECLARE
    measured regclass;
BEGIN
    FOR measured IN SELECT DISTINCT tgrelid::regclass FROM pg_trigger
                    WHERE tgfoid = 'ethos_init_decay_state'::regproc LOOP
        EXECUTE format('ALTER TABLE %s {change}', measured);
    END LOOP;
END
$$;
"""


UPGRADE = (
    r"""
ALTER TABLE ethos_settings ADD COLUMN auto_importance_answer float8 NOT NULL DEFAULT 4
    CHECK (auto_importance_answer BETWEEN 1 AND 100);
ALTER TABLE ethos_settings ALTER COLUMN auto_importance_half SET DEFAULT 4.25;
"""
    + _each_measured_table("ADD COLUMN IF NOT EXISTS auto_answer float8")
    + r"""
-- UUIDv7 with the millisecond's fraction in rand_a: 48 bits of Unix milliseconds, the
-- version, 12 bits of sub-millisecond time (4.096 a microsecond), then random bits.
-- PL/pgSQL, to read the clock once without a FROM (which would keep a SQL function from
-- being inlined: ~11 µs a row against ~7.5).
CREATE OR REPLACE FUNCTION ethos_uuid_v7() RETURNS uuid LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $$
DECLARE
    us bigint := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
BEGIN
    RETURN encode(
        overlay(uuid_send(gen_random_uuid())
                PLACING substring(int8send(us / 1000) FROM 3)
                        || int2send((28672 + (us % 1000) * 4096 / 1000)::int2)
                FROM 1 FOR 8),
        'hex')::uuid;
END
$$;

-- The informative words that make an automatic importance of 0.5 for an agent whose
-- memories hold `average` words: `half` for memories of 10 words, in proportion to
-- theirs (10 while the statistics do not count the agent yet; 5 at least: a one-word
-- memory of an agent of one-word memories is no news).
CREATE FUNCTION ethos_auto_half(half float8, average float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT half * greatest(coalesce(average, 10), 5) / 10
$$;

-- Whether a text asks something.
CREATE FUNCTION ethos_asks(content text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT strpos(content, '?') > 0 OR strpos(content, '？') > 0
$$;

CREATE OR REPLACE FUNCTION ethos_init_decay_state() RETURNS trigger LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_sort = off SET enable_incremental_sort = off
AS $$
DECLARE
    auto boolean;
    half float8;
    answer float8;
    otherwise text;
    fallback text;
    agent_policy text;
    average float8;
    words float8;
    asked boolean;
    importance float8 := NEW.importance;
    measured boolean := true;
BEGIN
    NEW.strength := coalesce(NEW.strength, NEW.salience);
    NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
    IF TG_TABLE_NAME = 'semantic_facts' THEN
        NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
    END IF;
    IF NEW.policy IS NOT NULL THEN
        RETURN NEW;
    END IF;
    IF TG_TABLE_NAME = 'memory_vectors' THEN
        measured := NEW.source_id IS NULL;  -- the vector of an episode or fact: its own
    END IF;
    -- One query: the settings (none yet: the defaults), the agent's own policy, and the
    -- length of its memories on average (NULL: the statistics do not count it yet).
    SELECT s.auto_importance, s.auto_importance_half, s.auto_importance_answer,
           s.importance_otherwise, s.default_policy,
           (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = NEW.agent_id),
           (SELECT t.length::float8 / nullif(t.docs, 0) FROM agent_text_stats AS t
            WHERE t.agent_id = NEW.agent_id)
    INTO auto, half, answer, otherwise, fallback, agent_policy, average
    FROM (SELECT) AS one LEFT JOIN ethos_settings AS s ON true;
    answer := coalesce(answer, 4);
    IF importance IS NULL AND agent_policy IS NULL AND measured AND coalesce(auto, true) THEN
        IF average IS NULL THEN  -- every word is new to the agent: each counts 1
            words := ethos_text_length(NEW.content_tsv);
        ELSE
            SELECT w.words INTO words
            FROM ethos_informative_words(NEW.agent_id, NEW.content_tsv) AS w;
        END IF;
        IF answer > 1 THEN  -- does it answer the agent's previous memory?
            """
    + branches(
        PREVIOUS,
        {f"TG_TABLE_NAME = '{table}'": {"table": table} for table in TABLES},
        PREVIOUS_ANY,
    ).replace("\n", "\n        ")
    + r"""
            IF asked THEN
                words := words * answer;
                NEW.auto_answer := answer;
            END IF;
        END IF;
        importance := ethos_auto_importance(words, ethos_auto_half(coalesce(half, 4.25), average));
        NEW.auto_importance := importance;
    END IF;
    IF importance IS NOT NULL THEN
        NEW.policy := (SELECT t.policy FROM importance_tiers AS t
                       WHERE t.min_importance <= importance
                       ORDER BY t.min_importance DESC LIMIT 1);
    END IF;
    NEW.policy := coalesce(NEW.policy, CASE WHEN importance IS NOT NULL THEN otherwise END,
                           agent_policy, fallback, 'standard');
    RETURN NEW;
END
$$;
"""
)


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script(
        earlier_function("0029_auto_importance_on", "ethos_init_decay_state", "UPGRADE")
        + earlier_function("0001_memory_tables", "ethos_uuid_v7", "DECAY_FUNCTIONS")
        + _each_measured_table("DROP COLUMN IF EXISTS auto_answer")
        + """
ALTER FUNCTION ethos_init_decay_state() SET plan_cache_mode = force_generic_plan;
DROP FUNCTION ethos_asks(text);
DROP FUNCTION ethos_auto_half(float8, float8);
ALTER TABLE ethos_settings DROP COLUMN auto_importance_answer;
ALTER TABLE ethos_settings ALTER COLUMN auto_importance_half SET DEFAULT 4;
"""
    )
