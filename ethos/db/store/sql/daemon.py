"""The statements of the daemon: idleness, heartbeat, status, dead letters."""

from __future__ import annotations

from ethos.db.store.query import sql, statements
from ethos.domain.tables import MEMORY_TABLES

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)

# Live and pruned rows per memory table, without counting: the planner's row estimates
# of the partial indexes over live rows (id WHERE NOT pruned) and pruned rows (pruned_at
# WHERE pruned), as of the last ANALYZE or VACUUM.
ROW_ESTIMATES = sql(
    "\nUNION ALL\n".join(
        f"""SELECT '{spec.name}' AS table_name, state, reltuples::bigint AS estimate
    FROM (VALUES ('live', '{spec.name}_live_id_idx'), ('pruned', '{spec.name}_pruned_at_idx'))
         AS i (state, index_name)
    JOIN pg_class AS c ON c.relname = i.index_name"""
        for spec in MEMORY_TABLES
    )
)

IS_IDLE = STATEMENTS["is_idle"]
DAEMON_HEARTBEAT = STATEMENTS["daemon_heartbeat"]
DAEMON_STOPPED = STATEMENTS["daemon_stopped"]
STATUS_DAEMONS = STATEMENTS["status_daemons"]
DEAD_LETTERS = STATEMENTS["dead_letters"]
STATUS_LAST_SWEEP = STATEMENTS["status_last_sweep"]
