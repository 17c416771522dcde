"""ethos: a PostgreSQL-native memory decay engine for AI agents."""

from ethos.engine import Engine
from ethos.errors import ConfigError, DatabaseError, EthosError, InputError, NotFoundError
from ethos.settings import Settings, load_settings

__all__ = [
    "ConfigError",
    "DatabaseError",
    "Engine",
    "EthosError",
    "InputError",
    "NotFoundError",
    "Settings",
    "load_settings",
]
