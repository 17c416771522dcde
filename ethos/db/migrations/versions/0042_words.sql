-- 0042: consolidation_runs is lifecycle_runs (see 0042_words.py).

ALTER TABLE consolidation_runs RENAME TO lifecycle_runs;
ALTER SEQUENCE consolidation_runs_id_seq RENAME TO lifecycle_runs_id_seq;
ALTER TABLE lifecycle_runs RENAME CONSTRAINT consolidation_runs_kind_check TO lifecycle_runs_kind_check;
ALTER TABLE lifecycle_runs RENAME CONSTRAINT consolidation_runs_status_check TO lifecycle_runs_status_check;
ALTER TABLE lifecycle_runs RENAME CONSTRAINT consolidation_runs_trigger_check TO lifecycle_runs_trigger_check;
-- PostgreSQL 18 names each NOT NULL constraint after its table (earlier ones do not).
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT conname FROM pg_constraint
             WHERE conrelid = 'lifecycle_runs'::regclass AND contype = 'n'
                   AND conname LIKE 'consolidation\_runs\_%'
    LOOP
        EXECUTE format('ALTER TABLE lifecycle_runs RENAME CONSTRAINT %I TO %I', c.conname,
                       'lifecycle_runs_' || substr(c.conname, length('consolidation_runs_') + 1));
    END LOOP;
END
$$;
ALTER INDEX consolidation_runs_pkey RENAME TO lifecycle_runs_pkey;
ALTER INDEX consolidation_runs_running_idx RENAME TO lifecycle_runs_running_idx;
ALTER INDEX consolidation_runs_started_at_idx RENAME TO lifecycle_runs_started_at_idx;
ALTER TRIGGER consolidation_runs_finished_is_final ON lifecycle_runs RENAME TO lifecycle_runs_finished_is_final;
ALTER VIEW ethos_consolidation_runs RENAME TO ethos_lifecycle_runs;
