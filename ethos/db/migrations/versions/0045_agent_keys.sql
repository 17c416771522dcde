-- 0045: keys lead with the agent (see 0045_agent_keys.py).

ALTER TABLE episodic_traces DROP CONSTRAINT episodic_traces_pkey;
ALTER TABLE ONLY episodic_traces
    ADD CONSTRAINT episodic_traces_pkey PRIMARY KEY (agent_id, id);
DROP INDEX episodic_traces_agent_live_idx;
CREATE INDEX episodic_traces_id_idx ON episodic_traces USING btree (id);

ALTER TABLE semantic_facts DROP CONSTRAINT semantic_facts_pkey;
ALTER TABLE ONLY semantic_facts
    ADD CONSTRAINT semantic_facts_pkey PRIMARY KEY (agent_id, id);
DROP INDEX semantic_facts_agent_live_idx;
CREATE INDEX semantic_facts_id_idx ON semantic_facts USING btree (id);

ALTER TABLE memory_vectors DROP CONSTRAINT memory_vectors_pkey;
ALTER TABLE ONLY memory_vectors
    ADD CONSTRAINT memory_vectors_pkey PRIMARY KEY (agent_id, id);
DROP INDEX memory_vectors_agent_live_idx;
CREATE INDEX memory_vectors_id_idx ON memory_vectors USING btree (id);

ALTER TABLE memory_links DROP CONSTRAINT memory_links_pkey;
ALTER TABLE ONLY memory_links
    ADD CONSTRAINT memory_links_pkey PRIMARY KEY (agent_id, a_id, b_id);

ALTER TABLE memory_revisions DROP CONSTRAINT memory_revisions_pkey;
ALTER TABLE ONLY memory_revisions
    ADD CONSTRAINT memory_revisions_pkey PRIMARY KEY (agent_id, id);
DROP INDEX memory_revisions_agent_idx;
