-- 0044: the items' index, byte by byte (see 0044_item_namespaces.py).

DROP INDEX semantic_facts_client_key_idx;
CREATE UNIQUE INDEX semantic_facts_client_key_idx ON semantic_facts USING btree (agent_id COLLATE "C", client_key) WHERE ((client_key IS NOT NULL) AND (NOT pruned));
