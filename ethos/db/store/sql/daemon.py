"""The statements of the daemon: idleness, heartbeat, status, dead letters."""

from __future__ import annotations

from ethos.db.store.query import statements

# The plain statements, in the .sql file of the same name beside this one.
STATEMENTS = statements(__file__)

ROW_ESTIMATES = STATEMENTS["row_estimates"]
IS_IDLE = STATEMENTS["is_idle"]
DAEMON_HEARTBEAT = STATEMENTS["daemon_heartbeat"]
DAEMON_STOPPED = STATEMENTS["daemon_stopped"]
STATUS_DAEMONS = STATEMENTS["status_daemons"]
DEAD_LETTERS = STATEMENTS["dead_letters"]
STATUS_LAST_SWEEP = STATEMENTS["status_last_sweep"]
