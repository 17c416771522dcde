-- The statements of the daemon: idleness, heartbeat, status, dead letters.
-- Each block is `-- name: <name>`, its comment, then the statement; %(param)s are its
-- parameters, bound by name.

-- name: is_idle
-- Idle: no retrieval recorded (by any process) for %(seconds)s.
SELECT coalesce(max(last_retrieval_at) < now() - make_interval(secs => %(seconds)s), true)
FROM retrieval_activity;

-- name: daemon_heartbeat
INSERT INTO daemons (id, host, pid, role, lock_backend_pid, next_sweep_due,
                     ltp_backlog, ltp_dropped)
VALUES (%(id)s, %(host)s, %(pid)s, %(role)s, %(lock_backend_pid)s, %(next_sweep_due)s,
        %(ltp_backlog)s, %(ltp_dropped)s)
ON CONFLICT (id) DO UPDATE
SET heartbeat_at = now(), role = excluded.role, lock_backend_pid = excluded.lock_backend_pid,
    next_sweep_due = excluded.next_sweep_due, ltp_backlog = excluded.ltp_backlog,
    ltp_dropped = excluded.ltp_dropped;

-- name: daemon_stopped
UPDATE daemons SET stopped_at = now(), role = 'standby' WHERE id = %(id)s;

-- name: status_daemons
-- Daemons whose heartbeat is recent, and whether each holds the leader lock now (seen in
-- pg_locks, so a dead holder is never reported).
SELECT d.id, d.host, d.pid, d.role, d.started_at, d.heartbeat_at, d.next_sweep_due,
       d.ltp_backlog, d.ltp_dropped,
       EXISTS (
           SELECT 1 FROM pg_locks AS l
           WHERE l.locktype = 'advisory' AND l.granted AND l.pid = d.lock_backend_pid
             AND ((l.classid::bigint << 32) | l.objid::bigint) = %(lock_key)s
       ) AS holds_leader_lock
FROM daemons AS d
WHERE d.stopped_at IS NULL AND d.heartbeat_at > now() - make_interval(secs => %(alive_seconds)s)
ORDER BY d.started_at;

-- name: dead_letters
-- How many retrievals were set aside, and how many of them in the last %(window)s seconds.
SELECT count(*) AS total,
       count(*) FILTER (WHERE dead_at > now() - make_interval(secs => %(window)s)) AS recent
FROM retrieval_dead_letters;

-- name: status_last_sweep
SELECT id, trigger, mode, status, started_at, finished_at, swept_at, scanned, updated, pruned,
       tables, daemon_id,
       round(extract(epoch FROM finished_at - started_at) * 1000) AS duration_ms
FROM sweep_runs WHERE mode <> 'prune' ORDER BY started_at DESC LIMIT 1;

-- name: row_estimates
-- Live and pruned rows of each memory table %(tables)s, without counting: the planner's
-- row estimates of the partial indexes over live rows (id WHERE NOT pruned) and pruned
-- rows (pruned_at WHERE pruned), as of the last ANALYZE or VACUUM.
SELECT t.table_name, i.state, c.reltuples::bigint AS estimate
FROM unnest(%(tables)s::text[]) WITH ORDINALITY AS t (table_name, k)
CROSS JOIN (VALUES ('live', '_live_id_idx'), ('pruned', '_pruned_at_idx')) AS i (state, suffix)
JOIN pg_class AS c ON c.relname = t.table_name || i.suffix
ORDER BY t.k, i.state;
