-- 0059: the durable queue takes the event kind 'unmatched' (see 0059_unmatched_hits.py).
-- Run again on a database at 0059, it changes nothing.

ALTER TABLE retrieval_queue DROP CONSTRAINT IF EXISTS retrieval_queue_kind_check;
ALTER TABLE retrieval_queue ADD CONSTRAINT retrieval_queue_kind_check
    CHECK (kind = ANY (ARRAY['retrieval'::text, 'surfaced'::text, 'unmatched'::text,
                             'useful'::text, 'wrong'::text]));
