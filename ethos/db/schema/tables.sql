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

-- An embedding in half precision, as memory_embeddings' index holds it: a statement
-- orders by ethos_half(e.embedding) <=> ethos_half(query) to scan that index (inlined,
-- it is the index's expression; the dimension is the schema's alone).
CREATE FUNCTION ethos_half(embedding vector) RETURNS halfvec
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT embedding::halfvec({dimension}) $$;

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
-- Searched by a half-precision copy of each embedding (half the index, the same
-- neighbours), the candidates it finds then ranked by their full vectors: the query
-- names ethos_half(embedding), as the index does.
CREATE INDEX memory_embeddings_embedding_hnsw ON memory_embeddings USING hnsw ((embedding::halfvec({dimension})) halfvec_cosine_ops);

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
-- <table>_due_made sets it, in the write path). A hint lives from one sweep to the
-- next: its arrays (22 bytes a row, up to a batch of rows) stay in the row up to a
-- page (toast_tuple_target), not compressed and moved to the TOAST table past 2 kB,
-- which cost a sweep that writes every row 5-9% of its time.
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
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02', toast_tuple_target='8160');
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
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02', toast_tuple_target='8160');
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
WITH (autovacuum_vacuum_scale_factor='0.02', autovacuum_vacuum_insert_scale_factor='0.02', toast_tuple_target='8160');
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
