"""Recall by text: every memory keeps a tsvector of its content (PostgreSQL full-text
search, in the configuration of [search] text_config) with a GIN index.

The tsvector also holds one lexeme naming the memory's agent (ethos_agent_lexeme: a hash,
never a word), so "this agent's memories with any of these words" is an intersection of
GIN posting lists, without visiting other agents' rows: one agent among many stays fast.
The content trigger of migration 0009 fills it too, on insert and whenever the content
or the agent changes; sweeps touch neither, so they stay HOT updates and never re-index
text.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-22
"""

import importlib

from ethos.migrations import execute_script

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")

FUNCTIONS = r"""
ALTER TABLE ethos_settings ADD COLUMN text_config regconfig NOT NULL DEFAULT 'english';

CREATE FUNCTION ethos_agent_lexeme(agent text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 'ethos_agent_' || md5(agent) $$;

CREATE FUNCTION ethos_text_vector(config regconfig, agent text, content text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector(config, content) || array_to_tsvector(ARRAY[ethos_agent_lexeme(agent)])
$$;

-- Any of the query's words (OR): a question rarely repeats every word of the memory it
-- asks about. NULL when no word is left (all stop words): nothing matches.
CREATE FUNCTION ethos_text_query(config regconfig, query text) RETURNS tsquery
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT string_agg(quote_literal(word), ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector(config, query))) AS word
$$;

CREATE FUNCTION ethos_text_config() RETURNS regconfig LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT text_config FROM ethos_settings), 'english'::regconfig)
$$;

CREATE OR REPLACE FUNCTION ethos_content_derived() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.content_key := ethos_content_key(NEW.content);
    NEW.content_tsv := ethos_text_vector(ethos_text_config(), NEW.agent_id, NEW.content);
    RETURN NEW;
END
$$;
"""

TABLE = """
ALTER TABLE {table} ADD COLUMN content_tsv tsvector;
UPDATE {table} SET content_tsv = ethos_text_vector('english', agent_id, content);
ALTER TABLE {table} ALTER COLUMN content_tsv SET NOT NULL;
CREATE INDEX {table}_content_tsv_idx ON {table} USING gin (content_tsv) WHERE NOT pruned;
"""


def upgrade() -> None:
    execute_script(FUNCTIONS)
    for table in MEMORY_TABLES:
        execute_script(TABLE.format(table=table))


def downgrade() -> None:
    consolidation = importlib.import_module("ethos.migrations.versions.0009_consolidation")
    execute_script(consolidation.CONTENT_DERIVED)
    for table in MEMORY_TABLES:
        execute_script(f"ALTER TABLE {table} DROP COLUMN content_tsv;")
    execute_script(
        """DROP FUNCTION ethos_text_config(); DROP FUNCTION ethos_text_query(regconfig, text);
           DROP FUNCTION ethos_text_vector(regconfig, text, text);
           DROP FUNCTION ethos_agent_lexeme(text);
           ALTER TABLE ethos_settings DROP COLUMN text_config;"""
    )
