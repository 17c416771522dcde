"""Errors that reach a user as one line, without a traceback."""


class EthosError(Exception):
    """Base class: the message is the whole story, printed as one line."""


class ConfigError(EthosError):
    """A configuration value, file or environment variable is wrong."""


class InputError(EthosError):
    """A caller passed a value ethos cannot accept; nothing was written."""


class NotFoundError(InputError):
    """A table or row id that does not exist."""


class DatabaseError(EthosError):
    """The database cannot be reached or lacks what ethos needs."""
