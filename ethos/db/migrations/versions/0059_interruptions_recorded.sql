-- 0059: a recovery says whether it finished (see 0059_interruptions_recorded.py). Run
-- again on a database at 0059, it changes nothing.

ALTER TABLE recoveries ADD COLUMN IF NOT EXISTS status text DEFAULT 'completed' NOT NULL;
ALTER TABLE recoveries DROP CONSTRAINT IF EXISTS recoveries_status_check;
ALTER TABLE recoveries ADD CONSTRAINT recoveries_status_check
    CHECK (status = ANY (ARRAY['completed'::text, 'interrupted'::text, 'failed'::text]));
