"""The one package that talks to the database. It opens the connections, runs every
statement by its name (ethos.db.store.sql, one module per concern), and turns the driver's
errors into ethos's (ethos.domain.errors), so no other module knows the driver. It never hands a
connection out: a sweep batch, a lock attempt or a heartbeat is one method; a flush of
LTP is a transaction object that offers exactly the statements a flush runs.

Store is one class made of a mixin per concern, each beside its statements:

- core: the server itself, the pools, transactions, the roles' grants, the leader lock
  (on sessions: how a connection is made and its driver errors become ethos's; and query:
  named parameters, the named statements of a .sql file, a statement on a Citus shard)
- memories: insert, fetch, repeats, listing, updates, revisions
- sweep: batches, sweepers' slices, the due count, sweep runs
- ltp: LTP flushes, the durable queue, links
- search: vector search, text recall, the LangGraph items, vectors and their index
- policies: the settings written to the database, assignment, moves
- lifecycle: merge, forget, purge, erase, recovery, lifecycle runs
- daemon: idleness, heartbeat, status, dead letters
- cluster: distributing the tables on a Citus cluster
"""

from ethos.db.store.cluster import ClusterStore, Distribution
from ethos.db.store.core import Row, check_server, ensure_database
from ethos.db.store.daemon import DaemonStore
from ethos.db.store.lifecycle import LifecycleStore
from ethos.db.store.ltp import LinkRound, LtpFlush, LtpStore
from ethos.db.store.memories import MemoryStore
from ethos.db.store.policies import PolicyStore, SettingDifference
from ethos.db.store.search import SearchStore
from ethos.db.store.sweep import SLICES, BatchResult, SweepStore, SweepWorker

__all__ = [
    "SLICES",
    "BatchResult",
    "Distribution",
    "LinkRound",
    "LtpFlush",
    "Row",
    "SettingDifference",
    "Store",
    "SweepStore",
    "SweepWorker",
    "check_server",
    "ensure_database",
]


class Store(
    MemoryStore,
    ClusterStore,
    LtpStore,
    SearchStore,
    PolicyStore,
    LifecycleStore,
    DaemonStore,
):
    """The database, as ethos uses it (see the concern modules for what each part does)."""
