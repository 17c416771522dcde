-- 0041: recall's indexes (see 0041_recall_indexes.py).

CREATE INDEX episodic_traces_agent_time_idx ON episodic_traces USING btree (agent_id, created_at, id) WHERE (NOT pruned);

DROP INDEX memory_vectors_content_tsv_idx;
CREATE INDEX memory_vectors_content_tsv_idx ON memory_vectors USING gin (content_tsv) WHERE ((NOT pruned) AND (source_id IS NULL));
