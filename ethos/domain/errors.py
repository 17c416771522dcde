"""Errors that reach a user as one line, without a traceback.

The store turns every driver error into one of the DatabaseError classes below, so
that no module but the store needs to know the driver's exceptions.
"""


class EthosError(Exception):
    """Base class: the message is the whole story, printed as one line."""


class ConfigError(EthosError):
    """A configuration value, file or environment variable is wrong."""


class InputError(EthosError):
    """A caller passed a value ethos cannot accept; nothing was written.

    A message names a parameter as the Python API calls it, quoted: `pruned_before`.
    Each door shows it as its callers know it (the CLI: --pruned-before); MCP and HTTP
    callers pass the same names."""


class NotFoundError(InputError):
    """A table or row id that does not exist; `ids` names the unknown ids, if any."""

    def __init__(self, message: str, ids: list[str] | None = None) -> None:
        super().__init__(message)
        self.ids = ids or []


def unknown_ids(what: str, ids: str, agent: str | None = None) -> str:
    """The one line for ids that name no `what` (of `agent`, where one is named)."""
    whose = f" of agent {agent}" if agent else ""
    return f"no {what}{whose} with id {ids}"


class DatabaseError(EthosError):
    """The database refused a statement, or lacks what ethos needs."""


class TransientDatabaseError(DatabaseError):
    """Waiting and trying again heals it: the server is away or restarting, the
    connection was lost, or the transaction lost a deadlock or serialization race."""


class LostRaceError(TransientDatabaseError):
    """The transaction lost a deadlock or serialization race: PostgreSQL rolled it back
    whole, so running it again at once is safe."""


class LockTimeoutError(DatabaseError):
    """A maintenance statement waited database.maintenance_lock_timeout_seconds for a lock
    another transaction held (a tenant's, say) and gave up: what it was for waits for a
    later pass, as a row that was skipped does."""
