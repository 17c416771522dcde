SELECT 
  'memory_vectors' as table_name, COUNT(*) as pruned_count 
  FROM memory_vectors WHERE pruned = true
UNION ALL
SELECT 'episodic_traces', COUNT(*) FROM episodic_traces WHERE pruned = true
UNION ALL
SELECT 'semantic_facts', COUNT(*) FROM semantic_facts WHERE pruned = true;
