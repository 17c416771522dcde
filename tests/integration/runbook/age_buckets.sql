SELECT 
  CASE 
    WHEN created_at > NOW() - INTERVAL '1 day' THEN '<1d'
    WHEN created_at > NOW() - INTERVAL '7 days' THEN '1-7d'
    WHEN created_at > NOW() - INTERVAL '30 days' THEN '7-30d'
    ELSE '>30d'
  END as age_bucket,
  AVG(salience) as avg_salience,
  COUNT(*) as count
FROM episodic_traces
WHERE pruned = false
GROUP BY 1;
