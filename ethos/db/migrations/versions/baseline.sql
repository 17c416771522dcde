-- The baseline: ethos/db/schema as `make baseline` (scripts/baseline.py) last copied it,
-- the files in the order ethos/db/schema/__init__.py gives. Not edited by hand: until the
-- first release the schema is edited and this copy written again; from the first release
-- on it is frozen, and a migration named by the release carries a database on
-- (decision 0025).

-- ethos's tables of memories and policies, as they are today (those of its own work are in
-- operations.sql). Read with the rest of this folder in the order
-- ethos/db/schema/__init__.py gives; `ethos migrate` runs the whole of it on a fresh database
-- (in one transaction) and records the newest migration as applied.
--
-- Every memory table carries the same decay state: salience (what recall and the views
-- read), strength and anchor_at (the curve's start: salience is strength decayed since
-- anchor_at, computed from the row's own values, never compounded), reinforcement (the
-- n of tau = base x multiplier^n, grown by spaced retrievals), retrieval_count, the
-- policy whose curve it follows, due_at / prune_at (when a sweep must next look at it)
-- and the soft delete (pruned, pruned_at, prune_reason). Plain SQL inserts may leave all
-- of that out: the write path (write_path.sql) fills it in.

-- Function bodies name tables and functions defined further on (as pg_dump does).
SET LOCAL check_function_bodies = off;

CREATE EXTENSION IF NOT EXISTS vector;

-- Ids that grow with time (UUIDv7): new rows land at the end of the primary key index.
CREATE FUNCTION ethos_uuid_v7() RETURNS uuid
    LANGUAGE plpgsql PARALLEL SAFE
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

-- ========================================================================================
-- Policies: how memories decay, which policy an agent or an importance gets, and the
-- settings the database keeps
-- ========================================================================================

-- Each policy's curve (the [policies] of the settings, written by `ethos migrate` or
-- `ethos settings apply`; one gone from the settings is kept, no longer configured, while
-- memories still follow it).
CREATE TABLE decay_policies (
    name text NOT NULL,
    curve text NOT NULL,
    base_tau_days double precision NOT NULL,
    ltp_multiplier double precision NOT NULL,
    max_tau_days double precision NOT NULL,
    frequency_weight double precision NOT NULL,
    emotional_weight double precision NOT NULL,
    prune_threshold double precision NOT NULL,
    power_exponent double precision NOT NULL,
    never_decays boolean NOT NULL,
    promote_after integer,
    promote_to text,
    promotion_counts integer[] DEFAULT '{}'::integer[] NOT NULL,
    promotion_targets text[] DEFAULT '{}'::text[] NOT NULL,
    lifetime_days double precision,  -- a plain memory's age at pruning (NULL: never)
    configured boolean DEFAULT true NOT NULL,  -- false: gone from the settings
    changed_at timestamp with time zone DEFAULT now() NOT NULL,  -- when its parameters last changed
    CONSTRAINT decay_policies_base_tau_days_check CHECK ((base_tau_days > (0)::double precision)),
    CONSTRAINT decay_policies_check CHECK ((max_tau_days >= base_tau_days)),
    CONSTRAINT decay_policies_check1 CHECK (((promote_after IS NULL) = (promote_to IS NULL))),
    CONSTRAINT decay_policies_curve_check CHECK ((curve = ANY (ARRAY['exponential'::text, 'power'::text]))),
    CONSTRAINT decay_policies_emotional_weight_check CHECK ((emotional_weight >= (0)::double precision)),
    CONSTRAINT decay_policies_frequency_weight_check CHECK ((frequency_weight >= (0)::double precision)),
    CONSTRAINT decay_policies_ltp_multiplier_check CHECK ((ltp_multiplier >= (1)::double precision)),
    CONSTRAINT decay_policies_name_check CHECK ((name ~ '^[a-z][a-z0-9_]*$'::text)),
    CONSTRAINT decay_policies_power_exponent_check CHECK ((power_exponent > (0)::double precision)),
    CONSTRAINT decay_policies_promote_after_check CHECK ((promote_after >= 1)),
    CONSTRAINT decay_policies_prune_threshold_check CHECK (((prune_threshold > (0)::double precision) AND (prune_threshold < (1)::double precision)))
);
ALTER TABLE ONLY decay_policies
    ADD CONSTRAINT decay_policies_pkey PRIMARY KEY (name);
ALTER TABLE ONLY decay_policies
    ADD CONSTRAINT decay_policies_promote_to_fkey FOREIGN KEY (promote_to) REFERENCES decay_policies(name) DEFERRABLE INITIALLY DEFERRED;

-- The policy an agent's memories get when they name none (`ethos policy assign`).
CREATE TABLE agent_policies (
    agent_id text NOT NULL,
    policy text NOT NULL,
    assigned_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE ONLY agent_policies
    ADD CONSTRAINT agent_policies_pkey PRIMARY KEY (agent_id);
ALTER TABLE ONLY agent_policies
    ADD CONSTRAINT agent_policies_policy_fkey FOREIGN KEY (policy) REFERENCES decay_policies(name);

-- An importance picks the policy of the highest tier it reaches ([importance] tiers).
CREATE TABLE importance_tiers (
    policy text NOT NULL,
    min_importance double precision NOT NULL,
    CONSTRAINT importance_tiers_min_importance_check CHECK (((min_importance >= (0)::double precision) AND (min_importance <= (1)::double precision)))
);
ALTER TABLE ONLY importance_tiers
    ADD CONSTRAINT importance_tiers_pkey PRIMARY KEY (policy);
ALTER TABLE ONLY importance_tiers
    ADD CONSTRAINT importance_tiers_policy_fkey FOREIGN KEY (policy) REFERENCES decay_policies(name);

-- How common each word is in English (wordfreq's Zipf scale, log10 of its count per
-- billion words; scripts/word_prior.py): what automatic importance knows of a word before
-- the agent has written it. Seeded from ethos/db/schema/word_prior.tsv.
CREATE TABLE word_prior (
    word text NOT NULL,
    zipf real NOT NULL,
    CONSTRAINT word_prior_zipf_check CHECK (((zipf >= (0)::double precision) AND (zipf <= (9)::double precision)))
);
ALTER TABLE ONLY word_prior
    ADD CONSTRAINT word_prior_pkey PRIMARY KEY (word);

-- The settings the write path and the views read: one row.
CREATE TABLE ethos_settings (
    id boolean DEFAULT true NOT NULL,
    default_policy text NOT NULL,
    importance_otherwise text NOT NULL,
    at_risk_margin double precision NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    links_tau_days double precision DEFAULT 30 NOT NULL,
    links_prune_weight double precision DEFAULT 0.05 NOT NULL,
    text_config regconfig DEFAULT 'english'::regconfig NOT NULL,
    auto_importance boolean DEFAULT true NOT NULL,
    auto_importance_half double precision DEFAULT 4.25 NOT NULL,
    auto_importance_particularity double precision DEFAULT 2 NOT NULL,
    auto_importance_answer double precision DEFAULT 4 NOT NULL,
    CONSTRAINT ethos_settings_auto_importance_answer_check CHECK (((auto_importance_answer >= (1)::double precision) AND (auto_importance_answer <= (100)::double precision))),
    CONSTRAINT ethos_settings_auto_importance_half_check CHECK ((auto_importance_half > (0)::double precision)),
    CONSTRAINT ethos_settings_id_check CHECK (id)
);
ALTER TABLE ONLY ethos_settings
    ADD CONSTRAINT ethos_settings_pkey PRIMARY KEY (id);
ALTER TABLE ONLY ethos_settings
    ADD CONSTRAINT ethos_settings_default_policy_fkey FOREIGN KEY (default_policy) REFERENCES decay_policies(name);
ALTER TABLE ONLY ethos_settings
    ADD CONSTRAINT ethos_settings_importance_otherwise_fkey FOREIGN KEY (importance_otherwise) REFERENCES decay_policies(name);

-- ========================================================================================
-- The memory tables
-- ========================================================================================

-- What happened, with its emotional tone (E in the formula).
CREATE TABLE episodic_traces (
    id uuid DEFAULT ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    emotional_tone double precision DEFAULT 0 NOT NULL,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    CONSTRAINT episodic_traces_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT episodic_traces_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_emotional_tone_check CHECK (((emotional_tone >= (0)::double precision) AND (emotional_tone <= (1)::double precision))),
    CONSTRAINT episodic_traces_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT episodic_traces_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT episodic_traces_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT episodic_traces_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT episodic_traces_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT episodic_traces_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT episodic_traces_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT episodic_traces_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT episodic_traces_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT episodic_traces_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT episodic_traces_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT episodic_traces_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT episodic_traces_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT episodic_traces_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');
ALTER TABLE ONLY episodic_traces
    ADD CONSTRAINT episodic_traces_pkey PRIMARY KEY (agent_id, id);  -- an agent's memories: one range
ALTER TABLE ONLY episodic_traces
    ADD CONSTRAINT episodic_traces_policy_fkey FOREIGN KEY (policy) REFERENCES decay_policies(name);
-- an agent's live episodes in time: the turns around a hit, for recall in context
CREATE INDEX episodic_traces_agent_time_idx ON episodic_traces USING btree (agent_id, created_at, id) WHERE (NOT pruned);
CREATE UNIQUE INDEX episodic_traces_client_key_idx ON episodic_traces USING btree (agent_id, client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));
CREATE INDEX episodic_traces_content_key_idx ON episodic_traces USING btree (agent_id, content_key) WHERE (NOT pruned);
CREATE INDEX episodic_traces_content_tsv_idx ON episodic_traces USING gin (content_tsv) WHERE (NOT pruned);
-- a memory by its id alone, live or pruned (the key leads with the agent)
CREATE INDEX episodic_traces_id_idx ON episodic_traces USING btree (id);
CREATE INDEX episodic_traces_live_id_idx ON episodic_traces USING btree (id) WHERE (NOT pruned);
CREATE INDEX episodic_traces_pruned_at_idx ON episodic_traces USING btree (pruned_at) WHERE pruned;

-- Durable knowledge, with a confidence that decays on a curve of its own; a fact may
-- expire (expires_at) whatever its salience.
CREATE TABLE semantic_facts (
    id uuid DEFAULT ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    confidence double precision DEFAULT 1.0 NOT NULL,
    confidence_strength double precision NOT NULL,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    expires_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    stated boolean DEFAULT true NOT NULL,  -- the caller states it: importance only lengthens its life
    CONSTRAINT semantic_facts_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT semantic_facts_confidence_check CHECK (((confidence >= (0)::double precision) AND (confidence <= (1)::double precision))),
    CONSTRAINT semantic_facts_confidence_strength_check CHECK (((confidence_strength >= (0)::double precision) AND (confidence_strength <= (1)::double precision))),
    CONSTRAINT semantic_facts_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_expires_at_1900_to_2199 CHECK (((expires_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (expires_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT semantic_facts_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT semantic_facts_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT semantic_facts_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT semantic_facts_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT semantic_facts_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT semantic_facts_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT semantic_facts_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT semantic_facts_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT semantic_facts_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT semantic_facts_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT semantic_facts_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT semantic_facts_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT semantic_facts_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');
ALTER TABLE ONLY semantic_facts
    ADD CONSTRAINT semantic_facts_pkey PRIMARY KEY (agent_id, id);  -- an agent's memories: one range
ALTER TABLE ONLY semantic_facts
    ADD CONSTRAINT semantic_facts_policy_fkey FOREIGN KEY (policy) REFERENCES decay_policies(name);
-- (the items of the LangGraph store: their agents byte by byte, so that the namespaces
-- under a prefix are one range of it)
CREATE UNIQUE INDEX semantic_facts_client_key_idx ON semantic_facts USING btree (agent_id COLLATE "C", client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));
CREATE INDEX semantic_facts_content_key_idx ON semantic_facts USING btree (agent_id, content_key) WHERE (NOT pruned);
CREATE INDEX semantic_facts_content_tsv_idx ON semantic_facts USING gin (content_tsv) WHERE (NOT pruned);
-- a memory by its id alone, live or pruned (the key leads with the agent)
CREATE INDEX semantic_facts_id_idx ON semantic_facts USING btree (id);
CREATE INDEX semantic_facts_live_id_idx ON semantic_facts USING btree (id) WHERE (NOT pruned);
CREATE INDEX semantic_facts_pruned_at_idx ON semantic_facts USING btree (pruned_at) WHERE pruned;

-- A memory whose content is a vector: a content and its embedding, searched by
-- similarity, with a decay of its own. (An episode's or fact's vector is no memory:
-- memory_embeddings.)
CREATE TABLE memory_vectors (
    id uuid DEFAULT ethos_uuid_v7() NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,
    salience double precision DEFAULT 1.0 NOT NULL,
    strength double precision NOT NULL,
    anchor_at timestamp with time zone NOT NULL,
    retrieval_count integer DEFAULT 0 NOT NULL,
    last_retrieved_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    pruned boolean DEFAULT false NOT NULL,
    pruned_at timestamp with time zone,
    prune_reason text,
    pinned boolean DEFAULT false NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    embedding vector({dimension}) NOT NULL,
    expires_at timestamp with time zone,
    policy text NOT NULL,
    importance double precision,
    due_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    prune_at timestamp with time zone DEFAULT '-infinity'::timestamp with time zone,
    surfaced_count integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    content_key uuid NOT NULL,
    merged_into uuid,
    content_tsv tsvector NOT NULL,
    client_key text,
    updated_at timestamp with time zone,
    auto_importance double precision,
    auto_particularity double precision,
    auto_answer double precision,
    reinforcement double precision DEFAULT 0 NOT NULL,
    CONSTRAINT memory_vectors_anchor_at_1900_to_2199 CHECK (((anchor_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (anchor_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_auto_importance_check CHECK (((auto_importance >= (0)::double precision) AND (auto_importance <= (1)::double precision))),
    CONSTRAINT memory_vectors_created_at_1900_to_2199 CHECK (((created_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (created_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_expires_at_1900_to_2199 CHECK (((expires_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (expires_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_importance_check CHECK (((importance >= (0)::double precision) AND (importance <= (1)::double precision))),
    CONSTRAINT memory_vectors_last_retrieved_at_1900_to_2199 CHECK (((last_retrieved_at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (last_retrieved_at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT memory_vectors_prune_reason_check CHECK ((prune_reason = ANY (ARRAY['decay'::text, 'expired'::text, 'feedback'::text, 'merged'::text, 'manual'::text]))),
    CONSTRAINT memory_vectors_reinforcement_check CHECK (((reinforcement >= (0)::double precision) AND (reinforcement <= (1000000000)::double precision))),
    CONSTRAINT memory_vectors_retrieval_count_at_most_1e9 CHECK ((retrieval_count <= 1000000000)),
    CONSTRAINT memory_vectors_retrieval_count_check CHECK ((retrieval_count >= 0)),
    CONSTRAINT memory_vectors_salience_check CHECK (((salience >= (0)::double precision) AND (salience <= (1)::double precision))),
    CONSTRAINT memory_vectors_strength_check CHECK (((strength >= (0)::double precision) AND (strength <= (1)::double precision))),
    CONSTRAINT memory_vectors_surfaced_count_at_most_1e9 CHECK ((surfaced_count <= 1000000000)),
    CONSTRAINT memory_vectors_surfaced_count_check CHECK ((surfaced_count >= 0)),
    CONSTRAINT memory_vectors_useful_count_at_most_1e9 CHECK ((useful_count <= 1000000000)),
    CONSTRAINT memory_vectors_useful_count_check CHECK ((useful_count >= 0)),
    CONSTRAINT memory_vectors_wrong_count_at_most_1e9 CHECK ((wrong_count <= 1000000000)),
    CONSTRAINT memory_vectors_wrong_count_check CHECK ((wrong_count >= 0))
)
WITH (fillfactor='50');
ALTER TABLE ONLY memory_vectors
    ADD CONSTRAINT memory_vectors_pkey PRIMARY KEY (agent_id, id);  -- an agent's memories: one range
ALTER TABLE ONLY memory_vectors
    ADD CONSTRAINT memory_vectors_policy_fkey FOREIGN KEY (policy) REFERENCES decay_policies(name);
CREATE UNIQUE INDEX memory_vectors_client_key_idx ON memory_vectors USING btree (agent_id, client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));
CREATE INDEX memory_vectors_content_key_idx ON memory_vectors USING btree (agent_id, content_key) WHERE (NOT pruned);
CREATE INDEX memory_vectors_content_tsv_idx ON memory_vectors USING gin (content_tsv) WHERE (NOT pruned);
CREATE INDEX memory_vectors_embedding_hnsw ON memory_vectors USING hnsw (embedding vector_cosine_ops) WHERE (NOT pruned);
-- a memory by its id alone, live or pruned (the key leads with the agent)
CREATE INDEX memory_vectors_id_idx ON memory_vectors USING btree (id);
CREATE INDEX memory_vectors_live_id_idx ON memory_vectors USING btree (id) WHERE (NOT pruned);
CREATE INDEX memory_vectors_pruned_at_idx ON memory_vectors USING btree (pruned_at) WHERE pruned;

-- The embeddings of episodes and facts, searched by similarity: one per text embedded
-- (`field`: '$' the memory's text; a LangGraph item, each text of its index's fields).
-- No memory: no decay state, policy, hints or trigger. A row is written once and never
-- updated (a new text writes new ones in place of the old), so the heap is packed full.
-- It is live exactly while its source is: a search reads the source's state, never a
-- copy of it. Its source's hard delete takes it (ethos_rows_removed), as does a
-- source's rewrite.
CREATE TABLE memory_embeddings (
    agent_id text NOT NULL,
    source_id uuid NOT NULL,
    field text DEFAULT '$'::text NOT NULL,
    source_table text NOT NULL,
    embedding vector({dimension}) NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_embeddings_source_table_check CHECK ((source_table = ANY (ARRAY['episodic_traces'::text, 'semantic_facts'::text])))
)
WITH (fillfactor='100');
ALTER TABLE ONLY memory_embeddings
    ADD CONSTRAINT memory_embeddings_pkey PRIMARY KEY (agent_id, source_id, field);  -- a memory's: one range
CREATE INDEX memory_embeddings_embedding_hnsw ON memory_embeddings USING hnsw (embedding vector_cosine_ops);

-- ========================================================================================
-- What hangs off a memory: links between memories, earlier contents
-- ========================================================================================

-- Memories recalled together: a weight that grows with co-retrieval and decays from
-- weighted_at; one link per pair (a_id < b_id).
CREATE TABLE memory_links (
    agent_id text NOT NULL,
    a_table text NOT NULL,
    a_id uuid NOT NULL,
    b_table text NOT NULL,
    b_id uuid NOT NULL,
    weight double precision NOT NULL,
    weighted_at timestamp with time zone NOT NULL,  -- when the weight was set: it decays from there
    co_retrievals integer DEFAULT 0 NOT NULL,
    useful_count integer DEFAULT 0 NOT NULL,
    wrong_count integer DEFAULT 0 NOT NULL,
    fades_at timestamp with time zone NOT NULL,  -- when it falls below links.prune_weight
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT memory_links_check CHECK ((a_id < b_id)),
    CONSTRAINT memory_links_weight_check CHECK (((weight > (0)::double precision) AND (weight <= (1)::double precision)))
);
ALTER TABLE ONLY memory_links
    ADD CONSTRAINT memory_links_pkey PRIMARY KEY (agent_id, a_id, b_id);
CREATE INDEX memory_links_b_idx ON memory_links USING btree (b_id);
CREATE INDEX memory_links_fades_at_idx ON memory_links USING btree (fades_at);

-- A content or metadata as it was before an UPDATE replaced it (the write path keeps it).
CREATE TABLE memory_revisions (
    id bigint NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    agent_id text NOT NULL,
    content text NOT NULL,  -- the text as it was before revised_at
    revised_at timestamp with time zone DEFAULT now() NOT NULL,
    revised_by text DEFAULT CURRENT_USER NOT NULL,
    metadata jsonb
);
ALTER TABLE memory_revisions ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME memory_revisions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);
ALTER TABLE ONLY memory_revisions
    ADD CONSTRAINT memory_revisions_pkey PRIMARY KEY (agent_id, id);
CREATE INDEX memory_revisions_memory_idx ON memory_revisions USING btree (table_name, memory_id);

-- ========================================================================================
-- Sweep schedules: hints of when rows fall due, a table per memory table
-- ========================================================================================

-- Hints of when rows fall due (prune = false: a write of salience; true: a prune), in
-- groups of rows of one slice of the table with their physical places: a sweep reads
-- the earliest groups and nothing else. `agent_id`: an agent of the group's rows, by
-- which Citus keeps the hint in their shard, beside the places it names (decision 0019).
-- `made`: the transaction that wrote the hint, on the node that keeps it (the trigger
-- <table>_due_made sets it, in the write path).
CREATE TABLE episodic_traces_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 NOT NULL,
    agent_id text NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');
CREATE INDEX episodic_traces_due_idx ON episodic_traces_due USING btree (prune, slice, at);

CREATE TABLE semantic_facts_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 NOT NULL,
    agent_id text NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');
CREATE INDEX semantic_facts_due_idx ON semantic_facts_due USING btree (prune, slice, at);

CREATE TABLE memory_vectors_due (
    prune boolean NOT NULL,
    at timestamp with time zone NOT NULL,
    slice smallint NOT NULL,
    n integer NOT NULL,
    ids uuid[] NOT NULL,
    places tid[] NOT NULL,
    made xid8 NOT NULL,
    agent_id text NOT NULL
)
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02');
CREATE INDEX memory_vectors_due_idx ON memory_vectors_due USING btree (prune, slice, at);

-- ========================================================================================
-- Text and vector statistics per agent, for recall's weights and automatic importance
-- ========================================================================================

-- Per agent: how many memories the text statistics count, and their words in all.
CREATE TABLE agent_text_stats (
    agent_id text NOT NULL,
    docs bigint NOT NULL,
    length bigint NOT NULL
);
ALTER TABLE ONLY agent_text_stats
    ADD CONSTRAINT agent_text_stats_pkey PRIMARY KEY (agent_id);

-- Per agent and word: in how many memories it appears, and the bounds of its BM25
-- share (max_tf, min_length).
CREATE TABLE lexeme_stats (
    agent_id text NOT NULL,
    lexeme text NOT NULL,
    docs bigint NOT NULL,
    max_tf integer,
    min_length integer
);
ALTER TABLE ONLY lexeme_stats
    ADD CONSTRAINT lexeme_stats_pkey PRIMARY KEY (agent_id, lexeme);

-- Per agent: the sum of its unit vectors (its centre; a vector's particularity is its
-- distance from it).
CREATE TABLE agent_vector_stats (
    agent_id text NOT NULL,
    vectors bigint NOT NULL,
    total vector NOT NULL
);
ALTER TABLE ONLY agent_vector_stats
    ADD CONSTRAINT agent_vector_stats_pkey PRIMARY KEY (agent_id);

-- What ethos keeps of its own work, beside the memories (tables.sql): retrievals on their
-- way to LTP, the runs and their audit, the daemons alive, which roles act for which
-- agents, and the seeds a fresh database starts with. Read after tables.sql, in the order
-- ethos/db/schema/__init__.py gives.

-- ========================================================================================
-- Retrievals on their way to LTP
-- ========================================================================================

-- Retrievals recorded from SQL (`ethos_record_retrieval`) and feedback, drained into
-- LTP by the daemon exactly once, oldest first. Each event names its agent's memory:
-- the key leads with the agent, so on a Citus cluster the queue is distributed by agent
-- beside the memories (decision record 0019). An event's id is given by the statement
-- that writes it (a set of events: from its call and its place in it) or at random.
CREATE TABLE retrieval_queue (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    kind text DEFAULT 'retrieval'::text NOT NULL,
    grp uuid,
    enqueued_at timestamp with time zone DEFAULT now() NOT NULL,
    agent_id text NOT NULL,
    CONSTRAINT retrieval_queue_at_window CHECK (((at >= '1900-01-01 00:00:00+00'::timestamp with time zone) AND (at < '2200-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT retrieval_queue_kind_check CHECK ((kind = ANY (ARRAY['retrieval'::text, 'surfaced'::text, 'unmatched'::text, 'useful'::text, 'wrong'::text]))),
    CONSTRAINT retrieval_queue_table_name_check CHECK ((table_name = ANY (ARRAY['memory_vectors'::text, 'episodic_traces'::text, 'semantic_facts'::text])))
);
ALTER TABLE ONLY retrieval_queue
    ADD CONSTRAINT retrieval_queue_pkey PRIMARY KEY (agent_id, id);
CREATE INDEX retrieval_queue_enqueued_at_idx ON retrieval_queue USING btree (enqueued_at);

-- Queued events the database refused for good, with the reason and how many.
CREATE TABLE retrieval_dead_letters (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    table_name text NOT NULL,
    memory_id uuid NOT NULL,
    at timestamp with time zone NOT NULL,
    kind text NOT NULL,
    grp uuid,
    enqueued_at timestamp with time zone NOT NULL,
    reason text NOT NULL,
    dead_at timestamp with time zone DEFAULT now() NOT NULL,
    n integer DEFAULT 1 NOT NULL,
    agent_id text,
    CONSTRAINT retrieval_dead_letters_n_check CHECK ((n >= 1))
);
ALTER TABLE ONLY retrieval_dead_letters
    ADD CONSTRAINT retrieval_dead_letters_pkey PRIMARY KEY (id);

-- When a retrieval last happened: the daemon defers sweeps while agents are busy.
CREATE TABLE retrieval_activity (
    id boolean DEFAULT true NOT NULL,
    last_retrieval_at timestamp with time zone NOT NULL,
    CONSTRAINT retrieval_activity_id_check CHECK (id)
);
ALTER TABLE ONLY retrieval_activity
    ADD CONSTRAINT retrieval_activity_pkey PRIMARY KEY (id);

-- Receipts of applied LTP flushes: a flush retried after an in-doubt commit is applied
-- once.
CREATE TABLE ltp_flushes (
    id uuid NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);
ALTER TABLE ONLY ltp_flushes
    ADD CONSTRAINT ltp_flushes_pkey PRIMARY KEY (id);
CREATE INDEX ltp_flushes_applied_at_idx ON ltp_flushes USING btree (applied_at);

-- ========================================================================================
-- Runs and audit: sweeps, lifecycle runs (merge, forget, purge, erase), recoveries, daemons
-- ========================================================================================

-- Audit: every sweep, its trigger, mode and counts; a finished run is final.
CREATE TABLE sweep_runs (
    id bigint NOT NULL,
    trigger text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    swept_at timestamp with time zone NOT NULL,
    agent_id text,
    scanned bigint DEFAULT 0 NOT NULL,
    updated bigint DEFAULT 0 NOT NULL,
    pruned bigint DEFAULT 0 NOT NULL,
    tables jsonb DEFAULT '{}'::jsonb NOT NULL,
    error text,
    daemon_id text,
    mode text DEFAULT 'due'::text NOT NULL,
    owner text,
    CONSTRAINT sweep_runs_mode_check CHECK ((mode = ANY (ARRAY['due'::text, 'full'::text, 'prune'::text]))),
    CONSTRAINT sweep_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'completed'::text, 'interrupted'::text, 'failed'::text]))),
    CONSTRAINT sweep_runs_trigger_check CHECK ((trigger = ANY (ARRAY['manual'::text, 'daemon'::text, 'api'::text])))
);
ALTER TABLE sweep_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME sweep_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);
ALTER TABLE ONLY sweep_runs
    ADD CONSTRAINT sweep_runs_pkey PRIMARY KEY (id);
CREATE INDEX sweep_runs_running_idx ON sweep_runs USING btree (id) WHERE (status = 'running'::text);
CREATE INDEX sweep_runs_started_at_idx ON sweep_runs USING btree (started_at);

-- Audit: merges, forgets, purges and erasures, their selector and counts.
CREATE TABLE lifecycle_runs (
    id bigint NOT NULL,
    kind text NOT NULL,
    trigger text NOT NULL,
    status text NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    as_of timestamp with time zone NOT NULL,
    selector jsonb DEFAULT '{}'::jsonb NOT NULL,  -- what was asked: tables, agent, ...
    counts jsonb DEFAULT '{}'::jsonb NOT NULL,  -- per table (and reason): numbers only
    error text,
    owner text,
    CONSTRAINT lifecycle_runs_kind_check CHECK ((kind = ANY (ARRAY['merge'::text, 'forget'::text, 'purge'::text, 'erase'::text]))),
    CONSTRAINT lifecycle_runs_status_check CHECK ((status = ANY (ARRAY['running'::text, 'completed'::text, 'interrupted'::text, 'failed'::text]))),
    CONSTRAINT lifecycle_runs_trigger_check CHECK ((trigger = ANY (ARRAY['manual'::text, 'daemon'::text, 'api'::text])))
);
ALTER TABLE lifecycle_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME lifecycle_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);
ALTER TABLE ONLY lifecycle_runs
    ADD CONSTRAINT lifecycle_runs_pkey PRIMARY KEY (id);
CREATE INDEX lifecycle_runs_running_idx ON lifecycle_runs USING btree (id) WHERE (status = 'running'::text);
CREATE INDEX lifecycle_runs_started_at_idx ON lifecycle_runs USING btree (started_at);

-- Audit: pruned memories brought back, by which command and selector.
CREATE TABLE recoveries (
    id bigint NOT NULL,
    recovered_at timestamp with time zone DEFAULT now() NOT NULL,
    recovered_as_of timestamp with time zone NOT NULL,
    table_name text NOT NULL,
    selector jsonb NOT NULL,
    command text NOT NULL,
    recovered bigint NOT NULL,
    strength double precision NOT NULL,
    -- how it ended: `recovered` is what it committed, also when interrupted
    status text DEFAULT 'completed'::text NOT NULL,
    CONSTRAINT recoveries_status_check CHECK ((status = ANY (ARRAY['completed'::text, 'interrupted'::text, 'failed'::text])))
);
ALTER TABLE recoveries ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME recoveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);
ALTER TABLE ONLY recoveries
    ADD CONSTRAINT recoveries_pkey PRIMARY KEY (id);

-- Daemons alive (heartbeats), which one leads, and what each holds back.
CREATE TABLE daemons (
    id text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    started_at timestamp with time zone DEFAULT now() NOT NULL,
    heartbeat_at timestamp with time zone DEFAULT now() NOT NULL,
    stopped_at timestamp with time zone,
    role text NOT NULL,
    lock_backend_pid integer,
    next_sweep_due timestamp with time zone,
    ltp_backlog bigint DEFAULT 0 NOT NULL,
    ltp_dropped bigint DEFAULT 0 NOT NULL,
    CONSTRAINT daemons_role_check CHECK ((role = ANY (ARRAY['starting'::text, 'leader'::text, 'standby'::text])))
);
ALTER TABLE ONLY daemons
    ADD CONSTRAINT daemons_pkey PRIMARY KEY (id);
CREATE INDEX daemons_heartbeat_at_idx ON daemons USING btree (heartbeat_at);

-- ========================================================================================
-- Agent roles: which PostgreSQL roles act for which agents
-- ========================================================================================

-- Which database roles speak for which agents (`ethos roles`); row security reads it.
CREATE TABLE ethos_agent_roles (
    role_name text NOT NULL,
    agent_id text NOT NULL
);
ALTER TABLE ONLY ethos_agent_roles
    ADD CONSTRAINT ethos_agent_roles_pkey PRIMARY KEY (role_name, agent_id);
-- Any role may read which agents it speaks for, and only that (ethos_own_agents()). A
-- row policy rather than a view: Citus checks a view's tables against the role querying
-- it, so a view would hide nothing on the workers.
ALTER TABLE ethos_agent_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY ethos_own ON ethos_agent_roles FOR SELECT USING (role_name = CURRENT_USER);
GRANT SELECT ON TABLE ethos_agent_roles TO PUBLIC;

-- ========================================================================================
-- Seeds: what a database no engine has opened yet needs for rows written to it by plain
-- SQL (`ethos migrate` then writes the settings' own values).
-- ========================================================================================

INSERT INTO decay_policies (name, curve, base_tau_days, ltp_multiplier, max_tau_days,
                            frequency_weight, emotional_weight, prune_threshold,
                            power_exponent, never_decays, lifetime_days)
VALUES ('standard', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, false, 7 * ln(20)),
       ('permanent', 'exponential', 7, 1.5, 3650, 0.3, 0.2, 0.05, 0.5, true, NULL);

INSERT INTO ethos_settings (default_policy, importance_otherwise, at_risk_margin)
VALUES ('standard', 'standard', 0.05);

-- The decay curve in SQL: what every sweep, LTP update and view computes a salience with.
-- ethos.decay holds the same formulas in Python; tests hold the two equal.
--
-- salience = min(1, S x D(t) x (1 + alpha*f) x (1 + beta*E)), D the policy's curve
-- (exponential, or FSRS's power curve) over t days since the anchor with
-- tau = min(base x multiplier^n, max). All are pure: a row's salience at a moment is a
-- function of its own columns and its policy, so sweeping often or rarely gives the same.

CREATE FUNCTION ethos_log_decay(t_days double precision, tau double precision, curve text, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN curve = 'power'
                THEN -power_exponent
                     * ln(1 + (power(0.9, -1 / power_exponent) - 1) * t_days / tau)
                ELSE -t_days / tau
           END
$$;

CREATE FUNCTION ethos_tau_days(n double precision, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(base × multiplier^n, max), in log space so a large n cannot overflow
    SELECT base_tau_days * exp(least(n * ln(ltp_multiplier), ln(max_tau_days / base_tau_days)))
$$;

CREATE FUNCTION ethos_strength_at(strength double precision, anchor_at timestamp with time zone, n double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- S × D(t), computed as exp(ln S + ln D) floored at e^−700 so that very old rows
    -- cannot raise PostgreSQL's float underflow error. Frozen: pinned, or a policy
    -- that never decays.
    SELECT CASE
        WHEN frozen OR strength = 0 THEN strength
        ELSE exp(greatest(
            ln(strength) + ethos_log_decay(
                greatest(date_part('epoch', at - anchor_at), 0) / 86400.0,
                ethos_tau_days(n, base_tau_days, ltp_multiplier, max_tau_days),
                curve, power_exponent),
            -700))
    END
$$;

CREATE FUNCTION ethos_salience(strength double precision, anchor_at timestamp with time zone, created_at timestamp with time zone, n double precision, emotion double precision, frozen boolean, at timestamp with time zone, curve text, base_tau_days double precision, ltp_multiplier double precision, max_tau_days double precision, frequency_weight double precision, emotional_weight double precision, power_exponent double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    -- min(1, S × D(t) × (1 + α·f) × (1 + β·E)), f = min(n / days_alive, 1)
    SELECT CASE WHEN frozen THEN strength ELSE least(1.0,
        ethos_strength_at(strength, anchor_at, n, false, at, curve,
                          base_tau_days, ltp_multiplier, max_tau_days, power_exponent)
        * (1 + frequency_weight
               * least(n / greatest(date_part('epoch', at - created_at) / 86400.0, 1), 1))
        * (1 + emotional_weight * least(greatest(emotion, 0), 1)))
    END
$$;

CREATE FUNCTION ethos_spaced_gain(strength double precision, decayed double precision, n double precision, frozen boolean, prune_threshold double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE
        WHEN frozen THEN 0
        WHEN n = 0 OR strength <= prune_threshold THEN 1
        ELSE 0.1 + 0.9 * least(greatest((strength - decayed) / (strength - prune_threshold),
                                        0), 1)
    END
$$;

CREATE FUNCTION ethos_slice(place tid) RETURNS smallint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ((place::text::point)[0]::bigint / 64 % 16)::smallint
$$;

-- Text recall's vocabulary: how content becomes a tsvector (stemmed by the text search
-- configuration the database keeps, plus a lexeme naming the agent), the key under which
-- a repeat is found (content_key), and per-agent statistics of documents and words
-- (agent_text_stats, lexeme_stats) that BM25-style weights read. The write path keeps
-- the statistics current; ethos_text_stats_rebuild() recounts them from the tables.

CREATE FUNCTION ethos_agent_lexeme(agent text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 'ethos_agent_' || md5(agent) $$;

CREATE FUNCTION ethos_text_config() RETURNS regconfig
    LANGUAGE sql STABLE
    AS $$
    SELECT coalesce((SELECT text_config FROM ethos_settings), 'english'::regconfig)
$$;

CREATE FUNCTION ethos_text_vector(config regconfig, agent text, content text) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT to_tsvector(config, content) || array_to_tsvector(ARRAY[ethos_agent_lexeme(agent)])
$$;

CREATE FUNCTION ethos_text_query(config regconfig, query text) RETURNS tsquery
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT string_agg(quote_literal(word), ' | ')::tsquery
    FROM unnest(tsvector_to_array(to_tsvector(config, query))) AS word
$$;

CREATE FUNCTION ethos_text_length(tsv tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT greatest(length(tsv) - 1, 0) $$;

-- Case folding: the one place the server's version picks the text. PostgreSQL 18
-- folds with casefold under its Unicode collation; before it, lower() (as the database's
-- ctype has it) and ß, which lower() keeps.
DO $do$
BEGIN
    IF current_setting('server_version_num')::int >= 180000 THEN
        CREATE FUNCTION ethos_fold(content text) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT casefold(normalize(content, NFKC) COLLATE pg_unicode_fast) $$;
    ELSE
        CREATE FUNCTION ethos_fold(content text) RETURNS text
            LANGUAGE sql IMMUTABLE PARALLEL SAFE
            AS $$ SELECT replace(lower(normalize(content, NFKC)), 'ß', 'ss') $$;
    END IF;
END
$do$;

-- The key under which a repeat is found: folded, invisible characters dropped, runs of
-- space one space.
CREATE FUNCTION ethos_content_key(content text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT md5(btrim(regexp_replace(regexp_replace(ethos_fold(content),
        '[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]', '', 'g'), '[[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+', ' ', 'g'), ' '))::uuid
$$;

CREATE FUNCTION ethos_idf(docs bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ln(1 + (greatest(docs, df) - df + 0.5::float8) / (df + 0.5::float8))
$$;

CREATE FUNCTION ethos_word_weight(lexeme text, total bigint, df bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN lexeme ~ '^[0-9]' THEN 1
                ELSE ethos_idf(total, df) / ethos_idf(total, 0) END
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

-- (PL/pgSQL, each call planned with its values: Citus routes the read to the agent's
-- shard, and plans no parameter of an SQL function)
CREATE FUNCTION ethos_text_idf(agent text, tsv tsvector) RETURNS double precision
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET plan_cache_mode TO 'force_custom_plan'
    AS $$
#variable_conflict use_variable
DECLARE
    summed double precision;
BEGIN
    SELECT coalesce(sum(ethos_idf(coalesce(a.docs, 0), coalesce(l.docs, 0))), 0) INTO summed
    FROM unnest(tsvector_to_array(tsv)) AS w (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN lexeme_stats AS l ON l.agent_id = agent AND l.lexeme = w.lexeme
    WHERE w.lexeme <> ethos_agent_lexeme(agent);
    RETURN summed;
END
$$;

-- PL/pgSQL, for the IF: the deletes' statements, which only a removal (sign -1) needs,
-- cost an insert's trigger as much as an upsert's.
CREATE FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    INSERT INTO agent_text_stats AS s (agent_id, docs, length)
    SELECT d.agent, sum(d.sign), sum(d.sign * ethos_text_length(d.tsv))
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET docs = s.docs + excluded.docs, length = s.length + excluded.length;

    -- A term's frequency is its number of positions, as recall's BM25 counts it; only
    -- the memories added (sign 1) widen the bounds (greatest and least skip NULL).
    INSERT INTO lexeme_stats AS s (agent_id, lexeme, docs, max_tf, min_length)
    SELECT d.agent, w.lexeme, sum(d.sign),
           max(coalesce(array_length(w.positions, 1), 1)) FILTER (WHERE d.sign > 0),
           min(ethos_text_length(d.tsv)) FILTER (WHERE d.sign > 0)
    FROM unnest(agents, tsvs, signs) AS d (agent, tsv, sign),
         unnest(d.tsv) AS w
    WHERE w.lexeme <> ethos_agent_lexeme(d.agent)
    GROUP BY d.agent, w.lexeme
    HAVING sum(d.sign) <> 0 OR bool_or(d.sign > 0)
    ORDER BY d.agent, w.lexeme
    ON CONFLICT (agent_id, lexeme) DO UPDATE
    SET docs = s.docs + excluded.docs,
        max_tf = greatest(s.max_tf, excluded.max_tf),
        min_length = least(s.min_length, excluded.min_length);

    -- (each DELETE names the agents as a list too: on a Citus shard, a statement joined
    -- to its agents only cannot be routed, and is refused.) The words removed are one
    -- array, looked up by key: joined to the rows, the generic plan took each word of
    -- every row removed again for each lexeme (0.15 s for 500 rows). A count at 0 is
    -- never kept, so a word need not be paired with its agent here.
    IF 0 > ANY (signs) THEN
        DELETE FROM lexeme_stats AS s
        WHERE s.agent_id = ANY (agents) AND s.docs <= 0
          AND s.lexeme = ANY (ARRAY(SELECT w.lexeme
                                    FROM unnest(tsvs, signs) AS d (tsv, sign),
                                         unnest(tsvector_to_array(d.tsv)) AS w (lexeme)
                                    WHERE d.sign < 0));

        DELETE FROM agent_text_stats AS s
        USING unnest(agents, signs) AS d (agent, sign)
        WHERE s.agent_id = ANY (agents)
          AND d.sign < 0 AND s.agent_id = d.agent AND s.docs <= 0;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_add(agents text[], tsvs tsvector[], signs integer[]) FROM PUBLIC;

CREATE FUNCTION ethos_text_stats_analyze() RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
BEGIN
    ANALYZE lexeme_stats, agent_text_stats;
END
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_analyze() FROM PUBLIC;

CREATE FUNCTION ethos_text_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM lexeme_stats;
    DELETE FROM agent_text_stats;
    SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
    FROM (SELECT agent_id, content_tsv FROM episodic_traces
          UNION ALL SELECT agent_id, content_tsv FROM semantic_facts
          UNION ALL SELECT agent_id, content_tsv FROM memory_vectors
         ) AS m;
$$;
REVOKE ALL ON FUNCTION ethos_text_stats_rebuild() FROM PUBLIC;

-- Automatic importance: how informative a new memory's words are to its agent (rare
-- words count more; an answer to the agent's previous question counts answer-fold), how
-- far its vector lies from the agent's centre (particularity), and which policy an
-- importance picks (importance_tiers, else the settings' importance_otherwise).

CREATE FUNCTION ethos_asks(content text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $_$
    SELECT (strpos(content, '?') > 0 AND content ~ '\?([^[:alnum:]_=&%/+-]|$)')
        OR strpos(content, '？') > 0
$_$;

CREATE FUNCTION ethos_auto_half(half double precision, average double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT half * greatest(coalesce(average, 10), 5) / 10
$$;

CREATE FUNCTION ethos_auto_importance(words double precision, half double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 1 - power(2, -least(words / half, 1000)) $$;

-- What ethos knows of a text's words before their agent writes any: each word's share of
-- the information of a word never seen (how rare it is in English, word_prior: its
-- surprisal, 9 - zipf, over that of the list's rarest, 9 - 4), stop words included (a
-- short statement is more than its rarest word: "I am vegetarian" says more than "haha
-- nice"); a word not listed, or a number, counts 1. Words as the 'simple' configuration
-- splits them, whatever the text configuration.
CREATE FUNCTION ethos_prior_words(content text) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(sum(least((9 - coalesce(p.zipf, 4)) / 5, 1)), 0)
    FROM unnest(tsvector_to_array(to_tsvector('simple', content))) AS u (word)
    LEFT JOIN word_prior AS p ON p.word = u.word
$$;

-- How much the prior weighs beside the agent's own statistics, by the words the agent
-- has written: all of it before any, half at 50, a tenth at 450.
CREATE FUNCTION ethos_prior_share(length bigint) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT 50 / (50 + greatest(coalesce(length, 0), 0)::float8) $$;

CREATE FUNCTION ethos_importance_raised(importance double precision, p double precision, k double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN importance >= 1 THEN 1
                ELSE 1 - exp(-least(-ln(1 - importance) * power(least(p, 1000), k), 700))
           END
$$;

CREATE FUNCTION ethos_importance_tier(importance double precision) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT coalesce(
        (SELECT t.policy FROM importance_tiers AS t WHERE t.min_importance <= importance
         ORDER BY t.min_importance DESC LIMIT 1),
        (SELECT s.importance_otherwise FROM ethos_settings AS s))
$$;

-- (PL/pgSQL: as a SQL function, inlined into the caller with the agent a parameter,
-- Citus found no statistics on the agent's shard and counted every word new)
CREATE FUNCTION ethos_informative_words(agent text, tsv tsvector) RETURNS TABLE(words double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
BEGIN
    RETURN QUERY
    SELECT coalesce(sum(ethos_word_weight(u.lexeme, coalesce(a.docs, 0), coalesce(l.docs, 0))),
                    0)
    FROM unnest(array_remove(tsvector_to_array(tsv), ethos_agent_lexeme(agent))) AS u (lexeme)
    LEFT JOIN agent_text_stats AS a ON a.agent_id = agent
    LEFT JOIN LATERAL (SELECT s.docs FROM lexeme_stats AS s
                       WHERE s.agent_id = agent AND s.lexeme = u.lexeme
                         AND u.lexeme !~ '^[0-9]'
                       LIMIT 1) AS l ON true;
END
$$;

CREATE FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
BEGIN
    INSERT INTO agent_vector_stats AS s (agent_id, vectors, total)
    SELECT d.agent, sign * count(*), sum(l2_normalize(d.embedding))
    FROM unnest(agents, embeddings) AS d (agent, embedding)
    GROUP BY d.agent
    ORDER BY d.agent
    ON CONFLICT (agent_id) DO UPDATE
    SET vectors = s.vectors + excluded.vectors,
        -- (the sign as the row proposed carries it: Citus loses a parameter here)
        total = CASE WHEN excluded.vectors > 0 THEN s.total + excluded.total
                     ELSE s.total - excluded.total END;

    IF sign < 0 THEN  -- as in ethos_text_stats_add, an addition runs no delete
        DELETE FROM agent_vector_stats AS s
        WHERE s.agent_id = ANY (agents) AND s.vectors <= 0;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION ethos_vector_stats_add(agents text[], embeddings vector[], sign integer) FROM PUBLIC;

CREATE FUNCTION ethos_vector_stats_rebuild() RETURNS void
    LANGUAGE sql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
    DELETE FROM agent_vector_stats;
    INSERT INTO agent_vector_stats (agent_id, vectors, total)
    SELECT agent_id, count(*), sum(l2_normalize(embedding))
    FROM (SELECT agent_id, embedding FROM memory_vectors
          UNION ALL SELECT agent_id, embedding FROM memory_embeddings) AS v
    GROUP BY agent_id;
$$;
REVOKE ALL ON FUNCTION ethos_vector_stats_rebuild() FROM PUBLIC;

CREATE FUNCTION ethos_particularity(agent text, embedding vector) RETURNS double precision
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT greatest(embedding <=> s.total, 0)
           / greatest(1 - vector_norm(s.total) / s.vectors, 0.001)
    FROM agent_vector_stats AS s
    WHERE s.agent_id = agent AND s.vectors >= 10
$$;

-- The write path: what happens when a row of a memory table is written, by ethos or by
-- plain SQL (an INSERT, a COPY, an UPDATE by hand), in one place per event:
--
--   <table>_write    BEFORE INSERT or UPDATE (of what it derives from), each row:
--                    ethos_write_row() takes its steps in the order written there.
--   <table>_added    AFTER INSERT, once a statement, over the rows it added:
--                    ethos_rows_added(): what is done for many rows at once.
--   <table>_removed  AFTER DELETE, once a statement, over the rows it deleted (purge,
--                    erase, a DELETE by hand): ethos_rows_removed().
--
--   <table>_due_made BEFORE INSERT on a table's hints, each row: ethos_hint_made().
--
--   memory_embeddings_added/_removed: ethos_embeddings_written(), what an embedding
--                    written or deleted derives (the agent's centre, its memory's
--                    importance). An embedding follows its memory by no trigger: a
--                    search reads whether the memory is live.
--
-- A sweep's or LTP's UPDATE writes none of the columns the first trigger names: the
-- frequent writes pay for no trigger. Each trigger passes its
-- table's name as the argument, so a function never reads TG_TABLE_NAME (on a Citus
-- shard that is the shard's name).
--
-- TRUNCATE runs no trigger: ethos never truncates a memory table. After a TRUNCATE by
-- hand, `SELECT ethos_text_stats_rebuild(), ethos_vector_stats_rebuild()` counts the
-- statistics anew.

-- The memory `id` of `memory_table` before `agent`'s newest one asks a question: the
-- memory written next answers it (automatic importance counts its words answer-fold).
CREATE FUNCTION ethos_previous_asks(memory_table text, agent text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'
    SET enable_sort TO 'off'
    SET enable_incremental_sort TO 'off'
    AS $$
#variable_conflict use_variable
BEGIN
    -- the agent's live memory just before this one, backwards along the key (agent_id,
    -- id): the settings keep each statement on it, planned once, with no sort. The agent
    -- also as `= ANY (ARRAY[agent])`, which Citus routes to the agent's shard and the
    -- planner does not take for an equality (with one, the (id) index gives this order,
    -- and its generic plan walks it through every later row of other agents)
    IF memory_table = 'episodic_traces' THEN
        RETURN (SELECT ethos_asks(p.content) FROM episodic_traces AS p
                WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
    ELSIF memory_table = 'semantic_facts' THEN
        RETURN (SELECT ethos_asks(p.content) FROM semantic_facts AS p
                WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
                ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
    END IF;
    RETURN (SELECT ethos_asks(p.content) FROM memory_vectors AS p
            WHERE p.agent_id >= agent AND p.agent_id = ANY (ARRAY[agent]) AND NOT p.pruned
                  AND (p.agent_id, p.id) < (agent, id)
            ORDER BY p.agent_id DESC, p.id DESC LIMIT 1);
END
$$;

-- The policy a new memory gets, and its automatic importance (NULL where none was
-- measured): the importance given, else one measured from its words, picks a tier
-- (ethos_importance_tier); without either, the agent's policy, else the default.
-- The words are the agent's (ethos_informative_words) blended with the language's
-- (ethos_prior_words) by ethos_prior_share of the words it has written; an emotional
-- `tone` raises the importance as a second reason to keep it (1 - (1 - i)(1 - tone));
-- a memory the caller `stated` is measured only to live longer: never shorter than the
-- default policy (decision 0023).
CREATE FUNCTION ethos_new_policy(memory_table text, agent text, id uuid, importance float8,
                                 tsv tsvector, content text,
                                 stated boolean, tone float8,
                                 OUT policy text, OUT auto_importance float8,
                                 OUT auto_answer float8)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode TO 'force_generic_plan'  -- planned once a session, whatever the words
    AS $$
#variable_conflict use_variable
DECLARE
    s ethos_settings;
    agent_policy text := (SELECT a.policy FROM agent_policies AS a WHERE a.agent_id = agent);
    stats agent_text_stats;  -- the agent's words so far; NULL: none counted yet
    average float8;  -- the agent's memories' length on average, blended as its words
    share float8;  -- the prior's part of the words
    words float8;
    floor float8;  -- the default policy's tier: a stated memory's least importance
BEGIN
    SELECT * INTO s FROM ethos_settings;
    IF importance IS NULL AND agent_policy IS NULL AND s.auto_importance THEN
        SELECT * INTO stats FROM agent_text_stats AS t WHERE t.agent_id = agent;
        share := ethos_prior_share(stats.length);
        -- (the length too: a young agent's average is the prior's 10 words as much)
        average := share * 10 + (1 - share) * coalesce(stats.length::float8 / nullif(stats.docs, 0), 10);
        words := 0;
        IF share < 1 THEN
            words := (1 - share) * (SELECT w.words FROM ethos_informative_words(agent, tsv) AS w);
        END IF;
        IF share >= 0.01 THEN  -- (an agent of 5,000 words or more reads no prior)
            words := words + share * ethos_prior_words(content);
        END IF;
        IF s.auto_importance_answer > 1 AND ethos_previous_asks(memory_table, agent, id) THEN
            words := words * s.auto_importance_answer;
            auto_answer := s.auto_importance_answer;
        END IF;
        importance := ethos_auto_importance(words,
                                            ethos_auto_half(s.auto_importance_half, average));
        importance := 1 - (1 - importance) * (1 - least(greatest(coalesce(tone, 0), 0), 1));
        IF stated THEN
            floor := (SELECT t.min_importance FROM importance_tiers AS t
                      WHERE t.policy = s.default_policy);
            importance := greatest(importance, floor);
        END IF;
        auto_importance := importance;
    END IF;
    policy := CASE WHEN importance IS NOT NULL THEN ethos_importance_tier(importance)
                   ELSE coalesce(agent_policy, s.default_policy) END;
    -- (a default policy no tier names: a stated memory that reaches no tier takes it)
    IF stated AND auto_importance IS NOT NULL AND floor IS NULL
       AND policy = s.importance_otherwise THEN
        policy := s.default_policy;
    END IF;
END
$$;

-- Each row written: the steps in this order. (A step of vectors alone sits inside
-- `IF vectors`: PL/pgSQL would look for a vector's columns in an episode's row.)
CREATE FUNCTION ethos_write_row() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $_$
DECLARE
    memory_table text := TG_ARGV[0];
    vectors boolean := TG_ARGV[0] = 'memory_vectors';
    rewritten boolean;  -- a new row, or its content or agent changed
    tone float8;  -- an episode's emotional tone
    stated boolean := false;  -- a fact the caller states
BEGIN
    rewritten := TG_OP = 'INSERT' OR NEW.content IS DISTINCT FROM OLD.content
                 OR NEW.agent_id IS DISTINCT FROM OLD.agent_id;

    -- 1. The content and the agent: checked, then what is derived from them (the key a
    --    repeat is found by, the words text recall searches).
    IF rewritten THEN
        IF NEW.content !~ '[^[:space:]\u001c-\u001f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]' THEN
            RAISE EXCEPTION 'content must not be empty' USING ERRCODE = 'check_violation';
        END IF;
        IF NEW.agent_id IS NOT NFC NORMALIZED OR NEW.agent_id ~ '[\u0001-\u001f\u007f-\u009f\u2028\u2029\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]' THEN
            RAISE EXCEPTION 'agent_id must be in Unicode NFC and hold no character that does not show'
                USING ERRCODE = 'check_violation';
        END IF;
        IF octet_length(NEW.content) > 262144 THEN
            RAISE EXCEPTION 'content is % bytes: at most 262,144 are stored',
                octet_length(NEW.content) USING ERRCODE = 'check_violation';
        END IF;
        NEW.content_key := ethos_content_key(NEW.content);
        NEW.content_tsv := ethos_text_vector(ethos_text_config(), NEW.agent_id, NEW.content);
    END IF;

    -- 2. A vector has a direction: with none in float32 (all zeros, or 1e-30s whose
    --    squares vanish) its cosine to itself is NaN, as to every query.
    IF vectors THEN
        IF TG_OP = 'INSERT' OR NEW.embedding IS DISTINCT FROM OLD.embedding THEN
            IF (NEW.embedding <=> NEW.embedding) = 'NaN' THEN
                RAISE EXCEPTION 'embedding has no direction: its float32 norm is 0 or infinite'
                    USING ERRCODE = 'check_violation';
            END IF;
        END IF;
    END IF;

    -- 3. A new memory's decay state: its curve starts at its salience when it is
    --    written; its policy, where not given, from its importance or its agent.
    IF TG_OP = 'INSERT' THEN
        NEW.strength := coalesce(NEW.strength, NEW.salience);
        NEW.anchor_at := coalesce(NEW.anchor_at, NEW.created_at);
        IF memory_table = 'semantic_facts' THEN
            NEW.confidence_strength := coalesce(NEW.confidence_strength, NEW.confidence);
        END IF;
        IF NEW.policy IS NULL THEN
            IF memory_table = 'episodic_traces' THEN
                tone := NEW.emotional_tone;
            ELSIF memory_table = 'semantic_facts' THEN
                stated := NEW.stated;
            END IF;
            SELECT p.policy, p.auto_importance, p.auto_answer
            INTO NEW.policy, NEW.auto_importance, NEW.auto_answer
            FROM ethos_new_policy(memory_table, NEW.agent_id, NEW.id, NEW.importance,
                                  NEW.content_tsv, NEW.content, stated,
                                  tone) AS p;
        END IF;
        RETURN NEW;
    END IF;

    -- 4. A text or metadata replaced: the one before is kept (memory_revisions).
    IF NEW.content IS DISTINCT FROM OLD.content OR NEW.metadata IS DISTINCT FROM OLD.metadata
    THEN
        INSERT INTO memory_revisions (table_name, memory_id, agent_id, content, metadata,
                                      revised_by)
        VALUES (memory_table, OLD.id, OLD.agent_id, OLD.content, OLD.metadata, session_user);
    END IF;

    -- 5. The statistics follow the words (and, for vectors, the direction) that changed.
    IF NEW.content_tsv <> OLD.content_tsv THEN
        PERFORM ethos_text_stats_add(ARRAY[OLD.agent_id, NEW.agent_id],
                                     ARRAY[OLD.content_tsv, NEW.content_tsv], ARRAY[-1, 1]);
    END IF;
    IF vectors THEN
        IF NEW.embedding <> OLD.embedding OR NEW.agent_id <> OLD.agent_id THEN
            PERFORM ethos_vector_stats_add(ARRAY[OLD.agent_id], ARRAY[OLD.embedding], -1);
            PERFORM ethos_vector_stats_add(ARRAY[NEW.agent_id], ARRAY[NEW.embedding], 1);
        END IF;
    END IF;
    RETURN NEW;
END
$_$;
REVOKE ALL ON FUNCTION ethos_write_row() FROM PUBLIC;

-- The hints of rows added: which rows a sweep looks at first (`-infinity`: at once), as
-- the sweep's hints are kept, in groups of at most 500 of one slice of the table.
CREATE FUNCTION ethos_new_hints(ids uuid[], places tid[])
    RETURNS TABLE (prune boolean, slice smallint, n bigint, ids uuid[], places tid[])
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT prune, slice, count(*), array_agg(id), array_agg(place)
    FROM (SELECT g.*,
                 (row_number() OVER (PARTITION BY prune, slice ORDER BY id) - 1) / 500 AS part
          FROM (SELECT kind.prune, r.id, r.place, ethos_slice(r.place) AS slice
                FROM unnest(ids, places) AS r (id, place)
                CROSS JOIN (VALUES (false), (true)) AS kind (prune)) AS g) AS g
    GROUP BY prune, slice, part
$$;

-- Each statement's rows added, at once. They are read into arrays first, and every
-- statement after names their agents (agent_id = ANY (r.agents)): on a Citus shard, where
-- this trigger fires for the shard's rows, a statement that reads the rows added beside
-- a distributed table cannot be planned, and one that names the agents runs on the
-- shard's colocated tables, as every agent of its rows hashes there (decision 0019).
CREATE FUNCTION ethos_rows_added() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    r record;  -- the rows added: their agents, each once; ids and agents of the live
               -- ones a sweep may find due
    written record;
BEGIN
    SELECT array_agg(DISTINCT a.agent_id) AS agents,
           array_agg(a.id) FILTER (WHERE a.hinted) AS ids,
           array_agg(a.agent_id) FILTER (WHERE a.hinted) AS owners
    INTO r
    FROM (SELECT *, NOT pruned AND coalesce(due_at, prune_at) IS NOT NULL AS hinted
          FROM added) AS a;
    IF r.agents IS NULL THEN  -- an upsert that only updated: nothing to hint or count, and
        RETURN NULL;          -- a statement about no agent Citus cannot route
    END IF;

    -- 1. Hints: the sweep looks at once at the live rows added that may fall due (their
    --    physical places, which the statement's rows do not carry, read back by a probe
    --    by key for each: a join could hash the whole table where an ANALYZE during a
    --    bulk load left the planner sure it is empty), in one statement: a statement's
    --    start is much of what one row costs. A hint names an agent of its rows.
    IF r.ids IS NULL THEN
        NULL;  -- none to hint
    ELSIF memory_table = 'episodic_traces' THEN
        INSERT INTO episodic_traces_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM episodic_traces AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
    ELSIF memory_table = 'semantic_facts' THEN
        INSERT INTO semantic_facts_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM semantic_facts AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
    ELSE
        INSERT INTO memory_vectors_due (agent_id, prune, at, slice, n, ids, places)
        SELECT r.agents[1], h.prune, '-infinity', h.slice, h.n, h.ids, h.places
        FROM (SELECT array_agg(a.id) AS ids, array_agg(at.place) AS places
              FROM unnest(r.ids, r.owners) AS a (id, agent)
              CROSS JOIN LATERAL (SELECT t.ctid AS place FROM memory_vectors AS t
                                  WHERE t.agent_id = a.agent AND t.id = a.id
                                    AND t.agent_id = ANY (r.agents) LIMIT 1) AS at) AS p
        CROSS JOIN LATERAL ethos_new_hints(p.ids, p.places) AS h;
    END IF;

    -- 2. The statistics count the rows added, in one pass (and how many there were).
    IF memory_table = 'memory_vectors' THEN
        SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
                   AS added,
               ethos_vector_stats_add(array_agg(agent_id), array_agg(embedding), 1) AS centred,
               count(*) AS n
        INTO written FROM added;
    ELSE
        SELECT ethos_text_stats_add(array_agg(agent_id), array_agg(content_tsv), array_agg(1))
                   AS added,
               count(*) AS n
        INTO written FROM added;
    END IF;
    -- A bulk load: the planner's picture of the statistics anew. Not on a Citus shard
    -- (named otherwise than its table): an ANALYZE there goes to every shard, which Citus
    -- refuses inside a shard's statement; the node's autovacuum analyzes its shards.
    IF written.n >= 10000 AND TG_TABLE_NAME = memory_table THEN
        PERFORM ethos_text_stats_analyze();
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_rows_added() FROM PUBLIC;

-- Each statement's rows deleted (purge, erase, a DELETE by hand), at once: their
-- revisions, embeddings and their share of the statistics go with them. As in ethos_rows_added, the
-- rows are read into arrays first and every statement names their agents. (A row at a
-- time, each statement planned again by Citus on a shard, a DELETE of 500 rows took
-- 2.3 s there; on one server an erase took 0.9 ms a row.)
CREATE FUNCTION ethos_rows_removed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    AS $$
DECLARE
    memory_table text := TG_ARGV[0];
    r record;  -- the rows deleted: their agents, each once; their ids and agents
BEGIN
    SELECT array_agg(DISTINCT d.agent_id) AS agents, array_agg(d.id) AS ids,
           array_agg(d.agent_id) AS owners
    INTO r FROM removed AS d;
    IF r.agents IS NULL THEN  -- a DELETE of no row
        RETURN NULL;
    END IF;

    DELETE FROM memory_revisions AS v
    USING unnest(r.ids, r.owners) AS d (id, agent)
    WHERE v.agent_id = ANY (r.agents) AND v.table_name = memory_table
      AND v.agent_id = d.agent AND v.memory_id = d.id;

    PERFORM ethos_text_stats_add(array_agg(d.agent_id), array_agg(d.content_tsv),
                                 array_agg(-1))
    FROM removed AS d;
    IF memory_table = 'memory_vectors' THEN
        PERFORM ethos_vector_stats_add(array_agg(d.agent_id), array_agg(d.embedding), -1)
        FROM removed AS d;
    ELSE  -- (no key to cascade on: the embeddings name their source's table in a column)
        DELETE FROM memory_embeddings AS e
        USING unnest(r.ids, r.owners) AS d (id, agent)
        WHERE e.agent_id = ANY (r.agents) AND e.agent_id = d.agent AND e.source_id = d.id;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_rows_removed() FROM PUBLIC;

-- The embeddings of `agent`'s memories `ids` in `memory_table`, a row each of ids,
-- fields and embeddings (what ethos writes them with), where the memory has none under
-- that field; first, all those of the memories `cleared` give way (a new text's take
-- their place). An id that is not the caller's memory of the agent there gets none (an
-- agent role sees its own agents' alone). Returns how many were written.
CREATE FUNCTION ethos_embed(memory_table text, agent text, ids uuid[], fields text[],
                            embeddings vector[], cleared uuid[]) RETURNS integer
    LANGUAGE plpgsql
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
#variable_conflict use_variable
DECLARE
    found uuid[];  -- the ids that are the agent's memories in memory_table
    written integer;
BEGIN
    IF memory_table = 'episodic_traces' THEN
        found := ARRAY(SELECT m.id FROM episodic_traces AS m
                       WHERE m.agent_id = agent AND m.id = ANY (ids));
    ELSIF memory_table = 'semantic_facts' THEN
        found := ARRAY(SELECT m.id FROM semantic_facts AS m
                       WHERE m.agent_id = agent AND m.id = ANY (ids));
    ELSE
        RAISE EXCEPTION 'no embeddings of %: only of episodic_traces or semantic_facts',
            memory_table USING ERRCODE = 'check_violation';
    END IF;
    IF cleared IS NOT NULL THEN
        DELETE FROM memory_embeddings AS e
        WHERE e.agent_id = agent AND e.source_id = ANY (cleared);
    END IF;
    INSERT INTO memory_embeddings (agent_id, source_id, field, source_table, embedding)
    SELECT agent, u.id, u.field, memory_table, u.embedding
    FROM unnest(ids, fields, embeddings) AS u (id, field, embedding)
    WHERE u.id = ANY (found)
    ON CONFLICT (agent_id, source_id, field) DO NOTHING;
    GET DIAGNOSTICS written = ROW_COUNT;
    RETURN written;
END
$$;

-- Each statement's embeddings written or deleted, at once (on a Citus shard, where the
-- agent's other tables are: what the write derives is written there, as for memories).
-- The agent's centre counts them. An insert first raises each memory's automatic
-- importance by how far its first embedding lies from the agent's other vectors (before
-- they count it), once, while the memory is as its insert left it. The new policy comes
-- with the values (Citus refuses a STABLE function of the row written inside an
-- UPDATE); the conditions hold on the row written.
CREATE FUNCTION ethos_embeddings_written() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO '$user', 'public', 'pg_temp'
    SET plan_cache_mode TO 'force_generic_plan'
    AS $$
DECLARE
    k float8;  -- how much particularity raises an importance
    r record;  -- the rows: their agents (each once, and each row's), directions
    v record;  -- each memory's first embedding: its table, id, agent, particularity
BEGIN
    SELECT array_agg(DISTINCT e.agent_id) AS agents, array_agg(e.agent_id) AS owners,
           array_agg(e.embedding) AS embeddings
    INTO r FROM rows AS e;
    IF r.agents IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM ethos_vector_stats_add(r.owners, r.embeddings, -1);
        RETURN NULL;
    END IF;
    k := (SELECT s.auto_importance_particularity FROM ethos_settings AS s);
    IF k > 0 THEN
        SELECT array_agg(f.source_table) AS types, array_agg(f.source_id) AS ids,
               array_agg(f.agent_id) AS agents,
               array_agg(ethos_particularity(f.agent_id, f.embedding)) AS ps
        INTO v
        FROM (SELECT DISTINCT ON (e.agent_id, e.source_id) e.*
              FROM rows AS e ORDER BY e.agent_id, e.source_id, e.field) AS f;
    END IF;
    PERFORM ethos_vector_stats_add(r.owners, r.embeddings, 1);
    IF NOT k > 0 THEN
        RETURN NULL;
    END IF;
    IF 'episodic_traces' = ANY (v.types) THEN
        UPDATE episodic_traces AS m
        SET auto_importance = n.importance, auto_particularity = n.p, policy = n.policy
        FROM (SELECT s.agent_id, s.id, s.auto_importance AS before, s.policy AS was, u.p,
                     i.importance,
                     ethos_importance_tier(i.importance) AS policy
              FROM unnest(v.types, v.ids, v.agents, v.ps) AS u (type, id, agent, p)
              JOIN episodic_traces AS s ON s.agent_id = u.agent AND s.id = u.id
              CROSS JOIN LATERAL (SELECT ethos_importance_raised(s.auto_importance, u.p, k)
                                         AS importance) AS i
              WHERE u.type = 'episodic_traces' AND u.p IS NOT NULL
                AND s.agent_id = ANY (v.agents)
                AND s.policy = ethos_importance_tier(s.auto_importance)) AS n
        WHERE m.agent_id = n.agent_id AND m.id = n.id AND m.agent_id = ANY (v.agents)
          AND m.auto_importance = n.before AND m.policy = n.was AND m.auto_particularity IS NULL
          AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity';
    END IF;
    IF 'semantic_facts' = ANY (v.types) THEN
        UPDATE semantic_facts AS m
        SET auto_importance = n.importance, auto_particularity = n.p, policy = n.policy
        FROM (SELECT s.agent_id, s.id, s.auto_importance AS before, s.policy AS was, u.p,
                     i.importance,
                     ethos_importance_tier(i.importance) AS policy
              FROM unnest(v.types, v.ids, v.agents, v.ps) AS u (type, id, agent, p)
              JOIN semantic_facts AS s ON s.agent_id = u.agent AND s.id = u.id
              CROSS JOIN LATERAL (SELECT ethos_importance_raised(s.auto_importance, u.p, k)
                                         AS importance) AS i
              WHERE u.type = 'semantic_facts' AND u.p IS NOT NULL
                AND s.agent_id = ANY (v.agents)
                AND s.policy = ethos_importance_tier(s.auto_importance)) AS n
        WHERE m.agent_id = n.agent_id AND m.id = n.id AND m.agent_id = ANY (v.agents)
          AND m.auto_importance = n.before AND m.policy = n.was AND m.auto_particularity IS NULL
          AND NOT m.pruned AND m.retrieval_count = 0 AND m.due_at = '-infinity';
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION ethos_embeddings_written() FROM PUBLIC;

CREATE TRIGGER memory_embeddings_added
    AFTER INSERT ON memory_embeddings REFERENCING NEW TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();
CREATE TRIGGER memory_embeddings_removed
    AFTER DELETE ON memory_embeddings REFERENCING OLD TABLE AS rows
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_embeddings_written();

CREATE TRIGGER episodic_traces_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON episodic_traces FOR EACH ROW EXECUTE FUNCTION ethos_write_row('episodic_traces');
CREATE TRIGGER episodic_traces_added
    AFTER INSERT ON episodic_traces REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('episodic_traces');
CREATE TRIGGER episodic_traces_removed
    AFTER DELETE ON episodic_traces REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('episodic_traces');

CREATE TRIGGER semantic_facts_write
    BEFORE INSERT OR UPDATE OF content, agent_id, metadata, content_tsv
    ON semantic_facts FOR EACH ROW EXECUTE FUNCTION ethos_write_row('semantic_facts');
CREATE TRIGGER semantic_facts_added
    AFTER INSERT ON semantic_facts REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('semantic_facts');
CREATE TRIGGER semantic_facts_removed
    AFTER DELETE ON semantic_facts REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('semantic_facts');

CREATE TRIGGER memory_vectors_write
    BEFORE INSERT
        OR UPDATE OF content, agent_id, metadata, content_tsv, embedding
    ON memory_vectors FOR EACH ROW EXECUTE FUNCTION ethos_write_row('memory_vectors');
CREATE TRIGGER memory_vectors_added
    AFTER INSERT ON memory_vectors REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_added('memory_vectors');
CREATE TRIGGER memory_vectors_removed
    AFTER DELETE ON memory_vectors REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION ethos_rows_removed('memory_vectors');

-- A hint is made by the transaction that writes it, on the node that keeps it: a full
-- sweep drops the hints made before it began by that node's transaction ids. (Not a
-- column default: Citus computes an INSERT's values on the coordinator when it sends the
-- INSERT through it, as an LTP flush's hints are, in the coordinator's ids.)
CREATE FUNCTION ethos_hint_made() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    NEW.made := pg_current_xact_id();
    RETURN NEW;
END
$$;

CREATE TRIGGER episodic_traces_due_made BEFORE INSERT ON episodic_traces_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER semantic_facts_due_made BEFORE INSERT ON semantic_facts_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();
CREATE TRIGGER memory_vectors_due_made BEFORE INSERT ON memory_vectors_due
    FOR EACH ROW EXECUTE FUNCTION ethos_hint_made();

-- Audit: a finished sweep or lifecycle run is final.
CREATE FUNCTION ethos_finished_runs_are_final() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF OLD.status <> 'running' THEN
        RAISE EXCEPTION '% row % is %: a finished run is not changed', TG_TABLE_NAME, OLD.id,
            OLD.status USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.id, NEW.trigger, NEW.started_at) IS DISTINCT FROM (OLD.id, OLD.trigger, OLD.started_at)
    THEN
        RAISE EXCEPTION '% row %: a run''s id, trigger and start are not changed',
            TG_TABLE_NAME, OLD.id USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER lifecycle_runs_finished_is_final BEFORE UPDATE ON lifecycle_runs
    FOR EACH ROW EXECUTE FUNCTION ethos_finished_runs_are_final();
CREATE TRIGGER sweep_runs_finished_is_final BEFORE UPDATE ON sweep_runs
    FOR EACH ROW EXECUTE FUNCTION ethos_finished_runs_are_final();

-- What an agent's own PostgreSQL role may reach: its agents (ethos_agent_roles), the
-- memories it can see, and the one door for recording retrievals from plain SQL.
-- `ethos roles` creates the roles and the row policies that call these functions.

-- On a Citus worker the row policies call it inside the shard's query, where Citus
-- refuses a read of another table unless told: ethos_agent_roles is a reference table,
-- whole on every node, so the read is local and right wherever the shard moves.
CREATE FUNCTION ethos_own_agents() RETURNS text[]
    LANGUAGE sql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $$
    SELECT coalesce(array_agg(agent_id), '{}') FROM ethos_agent_roles WHERE role_name = CURRENT_USER
$$;

-- The agents a role may write as: those it speaks for, if it is an agent role (any
-- agent, NULL, if it is not: row security does not restrict it). The vector write
-- trigger asks it of the role its caller runs as (the trigger runs as its owner).
CREATE FUNCTION ethos_role_agents(role_name text) RETURNS text[]
    LANGUAGE sql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $_$
    SELECT array_agg(r.agent_id) FROM ethos_agent_roles AS r WHERE r.role_name = $1
$_$;
REVOKE ALL ON FUNCTION ethos_role_agents(text) FROM PUBLIC;

-- Whether the caller sees a memory of the id (of `agent`'s, where one is named). The
-- queue's row policy names the event's agent: on a Citus cluster it runs on the queue's
-- shard, and reads the agent's memories in the colocated shard there (the setting lets a
-- statement on a shard run another, which is right where it names one agent). PL/pgSQL,
-- and the table's statement made for the values (EXECUTE): Citus routes a statement by
-- the agent it names, and cannot plan an SQL function's parameter inside its query.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid, agent text) RETURNS boolean
    LANGUAGE plpgsql STABLE
    SET citus.allow_nested_distributed_execution TO 'on'
    AS $_$
DECLARE
    found boolean;
BEGIN
    IF table_name NOT IN ('memory_vectors', 'episodic_traces', 'semantic_facts') THEN
        RETURN false;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT FROM %I AS m'
                   ' WHERE m.id = $1 AND ($2::text IS NULL OR m.agent_id = $2))', table_name)
        INTO found USING id, agent;
    RETURN found;
END
$_$;

-- The same, of any agent.
CREATE FUNCTION ethos_memory_is_visible(table_name text, id uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE
    AS $$
BEGIN
    RETURN ethos_memory_is_visible(table_name, id, NULL);
END
$$;

-- The one door for recording retrievals from plain SQL: events of `agent`'s memories of
-- the ids (none named: of every memory of each id), applied by the daemon's drain; it
-- returns how many it queued. An id of no such memory, or of none the caller sees (an
-- agent role, under row security), is left out. Each event is named by its memory's
-- agent and keyed by this call and its place in it: Citus writes the set on the agents'
-- shards as one INSERT ... SELECT there, which a key from a sequence or a random
-- default would make a COPY through the coordinator, and row security refuses COPY.
CREATE FUNCTION ethos_record_retrieval(table_name text, ids uuid[], at timestamp with time zone DEFAULT now(), agent text DEFAULT NULL) RETURNS integer
    LANGUAGE plpgsql
    AS $_$
#variable_conflict use_variable
DECLARE
    target text := CASE table_name WHEN 'vector' THEN 'memory_vectors'
                                   WHEN 'episode' THEN 'episodic_traces'
                                   WHEN 'fact' THEN 'semantic_facts'
                                   ELSE table_name END;
    queued integer;
BEGIN
    IF target IS NULL OR target NOT IN ('memory_vectors', 'episodic_traces', 'semantic_facts')
    THEN
        RAISE EXCEPTION 'unknown table %: use memory_vectors, episodic_traces or semantic_facts',
            coalesce(table_name, 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF at IS NULL THEN
        RAISE EXCEPTION 'at must be a moment, not NULL' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT (at >= '1900-01-01 00:00+00' AND at <= now() + interval '5 minutes') THEN
        RAISE EXCEPTION 'at % is outside 1900 .. now: a retrieval is recorded when it happens', at
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format(
        'INSERT INTO retrieval_queue (agent_id, id, table_name, memory_id, at)
         SELECT m.agent_id, md5($5::text || e.n)::uuid, $1, m.id, $2
         FROM unnest($3) WITH ORDINALITY AS e (id, n)
         JOIN %I AS m ON m.id = e.id AND ($4::text IS NULL OR m.agent_id = $4)',
        target) USING target, at, ids, agent, gen_random_uuid();
    GET DIAGNOSTICS queued = ROW_COUNT;
    RETURN queued;
END
$_$;

-- The SECURITY DEFINER functions run as ethos_definer, a role made for them (NOLOGIN: no
-- one connects as it), with the rights they need and no more: a flaw in one would not
-- run with the owner's rights (a superuser's, on the embedded server). The owner is made
-- a member, so that later migrations can replace them; ALTER ... OWNER needs the new
-- owner to have CREATE on the schema. ANALYZE needs ownership of the table before
-- PostgreSQL 17 (MAINTAIN since): there ethos_text_stats_analyze, which takes nothing
-- and analyzes two fixed tables, stays the owner's. Where the owner may not create roles
-- and the role does not exist, the functions stay the owner's, and a notice says so.
-- Under row security (agent roles) `ethos roles` gives the role a policy on each table.
DO $do$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'ethos_definer') THEN
        IF NOT (SELECT r.rolsuper OR r.rolcreaterole FROM pg_roles AS r
                WHERE r.rolname = current_user) THEN
            RAISE NOTICE 'the SECURITY DEFINER functions stay the owner''s: % may not create the role ethos_definer',
                current_user;
            RETURN;
        END IF;
        CREATE ROLE ethos_definer NOLOGIN;
    END IF;
    IF NOT pg_has_role(current_user, 'ethos_definer', 'USAGE') THEN
        GRANT ethos_definer TO CURRENT_USER;
    END IF;
    GRANT USAGE, CREATE ON SCHEMA public TO ethos_definer;
    GRANT SELECT ON memory_vectors, ethos_settings, importance_tiers, agent_policies,
                    ethos_agent_roles, word_prior TO ethos_definer;
    GRANT SELECT, UPDATE (auto_importance, auto_particularity, policy)
        ON episodic_traces, semantic_facts TO ethos_definer;
    GRANT SELECT, INSERT ON episodic_traces_due, semantic_facts_due, memory_vectors_due
        TO ethos_definer;
    GRANT SELECT, INSERT, UPDATE, DELETE ON lexeme_stats, agent_text_stats, agent_vector_stats
        TO ethos_definer;
    GRANT SELECT, INSERT, DELETE ON memory_revisions TO ethos_definer;
    GRANT SELECT, DELETE ON memory_embeddings TO ethos_definer;
    IF NOT EXISTS (SELECT FROM pg_policies WHERE tablename = 'ethos_agent_roles'
                                             AND policyname = 'ethos_definer') THEN
        CREATE POLICY ethos_definer ON ethos_agent_roles FOR SELECT TO ethos_definer
            USING (true);
    END IF;
    ALTER FUNCTION ethos_role_agents(text) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_vector_stats_add(text[], vector[], integer) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_vector_stats_rebuild() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_text_stats_add(text[], tsvector[], integer[]) OWNER TO ethos_definer;
    ALTER FUNCTION ethos_text_stats_rebuild() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_write_row() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_added() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_rows_removed() OWNER TO ethos_definer;
    ALTER FUNCTION ethos_embeddings_written() OWNER TO ethos_definer;
    IF current_setting('server_version_num')::int >= 170000 THEN
        EXECUTE 'GRANT MAINTAIN ON lexeme_stats, agent_text_stats TO ethos_definer';
        ALTER FUNCTION ethos_text_stats_analyze() OWNER TO ethos_definer;
    ELSE
        GRANT EXECUTE ON FUNCTION ethos_text_stats_analyze() TO ethos_definer;
    END IF;
END
$do$;

-- Monitoring views: what an operator reads with plain SQL (runbooks/operations.md).

CREATE VIEW ethos_memories AS
 SELECT table_name,
    id,
    agent_id,
    content,
    salience,
    confidence,
    retrieval_count,
    last_retrieved_at,
    created_at,
    pruned,
    pruned_at,
    prune_reason,
    pinned,
        CASE
            WHEN (created_at > (now() - '1 day'::interval)) THEN '<1d'::text
            WHEN (created_at > (now() - '7 days'::interval)) THEN '1-7d'::text
            WHEN (created_at > (now() - '30 days'::interval)) THEN '7-30d'::text
            ELSE '>30d'::text
        END AS age_bucket,
    policy,
    importance
   FROM ( SELECT 'memory_vectors'::text AS table_name,
            memory_vectors.id,
            memory_vectors.agent_id,
            memory_vectors.content,
            memory_vectors.salience,
            NULL::double precision AS confidence,
            memory_vectors.retrieval_count,
            memory_vectors.last_retrieved_at,
            memory_vectors.created_at,
            memory_vectors.pruned,
            memory_vectors.pruned_at,
            memory_vectors.prune_reason,
            memory_vectors.pinned,
            memory_vectors.policy,
            memory_vectors.importance
           FROM memory_vectors
        UNION ALL
         SELECT 'episodic_traces'::text,
            episodic_traces.id,
            episodic_traces.agent_id,
            episodic_traces.content,
            episodic_traces.salience,
            NULL::double precision,
            episodic_traces.retrieval_count,
            episodic_traces.last_retrieved_at,
            episodic_traces.created_at,
            episodic_traces.pruned,
            episodic_traces.pruned_at,
            episodic_traces.prune_reason,
            episodic_traces.pinned,
            episodic_traces.policy,
            episodic_traces.importance
           FROM episodic_traces
        UNION ALL
         SELECT 'semantic_facts'::text,
            semantic_facts.id,
            semantic_facts.agent_id,
            semantic_facts.content,
            semantic_facts.salience,
            semantic_facts.confidence,
            semantic_facts.retrieval_count,
            semantic_facts.last_retrieved_at,
            semantic_facts.created_at,
            semantic_facts.pruned,
            semantic_facts.pruned_at,
            semantic_facts.prune_reason,
            semantic_facts.pinned,
            semantic_facts.policy,
            semantic_facts.importance
           FROM semantic_facts) m;

CREATE VIEW ethos_agent_counts AS
 SELECT table_name,
    agent_id,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM ethos_memories
  GROUP BY table_name, agent_id;

CREATE VIEW ethos_at_risk AS
 SELECT m.table_name,
    m.id,
    m.agent_id,
    "left"(m.content, 80) AS content,
    COALESCE(m.confidence, m.salience) AS value,
    p.prune_threshold,
    m.policy,
    m.retrieval_count,
    m.last_retrieved_at
   FROM ((ethos_memories m
     JOIN decay_policies p ON ((p.name = m.policy)))
     CROSS JOIN ethos_settings s)
  WHERE ((NOT m.pruned) AND (NOT m.pinned) AND (NOT p.never_decays) AND (COALESCE(m.confidence, m.salience) < (p.prune_threshold + s.at_risk_margin)))
  ORDER BY COALESCE(m.confidence, m.salience);

CREATE VIEW ethos_lifecycle_runs AS
 SELECT id,
    kind,
    trigger,
    status,
    started_at,
    finished_at,
    as_of,
    selector,
    counts,
    (date_part('epoch'::text, (finished_at - started_at)) * (1000)::double precision) AS duration_ms,
    error
   FROM lifecycle_runs
  ORDER BY started_at DESC;

CREATE VIEW ethos_counts AS
 SELECT table_name,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    count(*) FILTER (WHERE (pinned AND (NOT pruned))) AS pinned
   FROM ethos_memories
  GROUP BY table_name;

CREATE VIEW ethos_links AS
 SELECT l.agent_id,
    l.a_table,
    l.a_id,
    l.b_table,
    l.b_id,
    (l.weight * exp(GREATEST((((- date_part('epoch'::text, (now() - l.weighted_at))) / (86400.0)::double precision) / s.links_tau_days), ('-700'::integer)::double precision))) AS weight,
    l.co_retrievals,
    l.useful_count,
    l.wrong_count,
    l.weighted_at,
    l.created_at,
    rank() OVER (PARTITION BY l.agent_id ORDER BY (l.weight * exp(GREATEST((((- date_part('epoch'::text, (now() - l.weighted_at))) / (86400.0)::double precision) / s.links_tau_days), ('-700'::integer)::double precision))) DESC) AS rank_in_agent
   FROM (memory_links l
     CROSS JOIN ethos_settings s)
  WHERE (l.fades_at > now());

CREATE VIEW ethos_ltp AS
 SELECT id AS daemon_id,
    role,
    heartbeat_at,
    ltp_backlog,
    ltp_dropped
   FROM daemons
  WHERE (stopped_at IS NULL);

CREATE VIEW ethos_most_retrieved AS
 SELECT table_name,
    id,
    agent_id,
    "left"(content, 80) AS content,
    retrieval_count,
    last_retrieved_at,
    salience
   FROM ethos_memories
  WHERE ((NOT pruned) AND (retrieval_count > 0))
  ORDER BY retrieval_count DESC, last_retrieved_at DESC;

CREATE VIEW ethos_policy_counts AS
 SELECT table_name,
    policy,
    count(*) FILTER (WHERE (NOT pruned)) AS live,
    count(*) FILTER (WHERE pruned) AS pruned,
    avg(salience) FILTER (WHERE (NOT pruned)) AS avg_salience
   FROM ethos_memories m
  GROUP BY table_name, policy;

CREATE VIEW ethos_retrieval_queue AS
 SELECT count(*) AS backlog,
    min(enqueued_at) AS oldest_enqueued_at,
    date_part('epoch'::text, (now() - min(enqueued_at))) AS oldest_age_seconds
   FROM retrieval_queue;

CREATE VIEW ethos_salience_by_age AS
 SELECT table_name,
    age_bucket,
    avg(salience) AS avg_salience,
    count(*) AS count
   FROM ethos_memories
  WHERE (NOT pruned)
  GROUP BY table_name, age_bucket;

CREATE VIEW ethos_sweep_history AS
 SELECT id,
    trigger,
    status,
    daemon_id,
    agent_id,
    started_at,
    finished_at,
    swept_at,
    (date_part('epoch'::text, (finished_at - started_at)) * (1000)::double precision) AS duration_ms,
    scanned,
    updated,
    pruned,
    ((scanned)::double precision / NULLIF(date_part('epoch'::text, (finished_at - started_at)), (0)::double precision)) AS rows_per_second,
    tables,
    error
   FROM sweep_runs
  ORDER BY started_at DESC;
