"""ethos: a PostgreSQL-native memory decay engine for AI agents.

The names below load on first use, so that importing a pure module (ethos.domain.decay, say)
does not load the database driver through this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ethos.domain.errors import (
        ConfigError,
        DatabaseError,
        EthosError,
        InputError,
        NotFoundError,
    )
    from ethos.services.engine import Engine
    from ethos.settings import Settings, load_settings

_EXPORTS = {
    "ConfigError": "ethos.domain.errors",
    "DatabaseError": "ethos.domain.errors",
    "Engine": "ethos.services.engine",
    "EthosError": "ethos.domain.errors",
    "InputError": "ethos.domain.errors",
    "NotFoundError": "ethos.domain.errors",
    "Settings": "ethos.settings",
    "load_settings": "ethos.settings",
}

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


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'ethos' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
