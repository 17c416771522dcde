"""Where settings come from: the config file (found by --config, $ETHOS_CONFIG or
./ethos.toml) and the ETHOS_* environment variables, which pydantic-settings reads."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic_settings import PydanticBaseSettingsSource

from ethos.domain.errors import ConfigError

ENV_PREFIX = "ETHOS_"
CONFIG_ENV = "ETHOS_CONFIG"
DEFAULT_CONFIG_NAME = "ethos.toml"

# The config file's values while load_settings builds a Settings: the lowest source.
_FILE_VALUES: ContextVar[dict[str, Any] | None] = ContextVar("ethos_file_values", default=None)


class FileSource(PydanticBaseSettingsSource):
    """The values of the file being loaded (file_values), under the environment's."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False  # unused: __call__ gives every value at once

    def __call__(self) -> dict[str, Any]:
        return _FILE_VALUES.get() or {}


@contextmanager
def file_values(values: dict[str, Any]) -> Iterator[None]:
    """The values FileSource gives while a Settings is built inside this block."""
    token = _FILE_VALUES.set(values)
    try:
        yield
    finally:
        _FILE_VALUES.reset(token)


def find_config(explicit: str | Path | None = None) -> Path | None:
    """--config, then $ETHOS_CONFIG, then ./ethos.toml if it exists."""
    if explicit:
        return Path(explicit)
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    local = Path.cwd() / DEFAULT_CONFIG_NAME
    return local if local.is_file() else None


def read_config(path: Path) -> dict[str, Any]:
    """The file's tables; a missing or malformed file is a ConfigError naming it."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
