"""What a settings error says: the key, the value and where it was given (the file, a
variable, an argument), in one line."""

from __future__ import annotations

import os
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ethos.domain.errors import ConfigError
from ethos.settings_sources import CONFIG_ENV, ENV_PREFIX


def unparsed_env(error: str) -> str:
    """A list or table given in the environment must be JSON; pydantic-settings says
    only which section failed, so the variables of that section are named."""
    section = error.split('"')[1] if error.count('"') >= 2 else ""
    prefix = f"{ENV_PREFIX}{section.upper()}"
    shown = ", ".join(n for n in sorted(os.environ) if n.startswith(prefix)) or prefix
    return (
        f"environment variable {shown}: a list or table value must be JSON"
        """ (e.g. ETHOS_DEDUP__TABLES='["fact", "vector"]')"""
    )


def _given(values: Any, parts: list[str]) -> bool:
    for part in parts:
        if not isinstance(values, dict) or part not in values:
            return False
        values = values[part]
    return True


def check_env_sections(sections: Collection[str]) -> None:
    """pydantic-settings ignores a variable naming no section: ETHOS_<SECTION>__<KEY>
    with an unknown section is a typo (an error); any other, such as ETHOS_VENV in a
    user's own scripts, is only named (warned once: Python shows a warning once)."""
    for name in sorted(os.environ):
        if not name.startswith(ENV_PREFIX) or name == CONFIG_ENV:
            continue
        section, nested, _ = name[len(ENV_PREFIX) :].partition("__")
        if section.lower() in sections:
            continue
        if nested:
            raise ConfigError(
                f"environment variable {name}: unknown section {section.lower()!r}"
                f" (sections: {', '.join(sorted(sections))}; a variable of your own, such as"
                " a token, needs a name outside ETHOS_)"
            )
        warnings.warn(
            f"environment variable {name} names no section of ethos's settings: ignored",
            UserWarning,
            stacklevel=3,
        )


def describe(exc: ValidationError, path: Path | None, overrides: dict[str, Any]) -> str:
    """The first error of a Settings, with the source of its value."""
    error = exc.errors()[0]
    key = ".".join(str(part) for part in error["loc"])
    message = str(error["ctx"]["error"]) if error["type"] == "value_error" else error["msg"]
    if not key:
        # A check across sections names its key at the start of its message.
        key, _, message = message.partition(": ") if ": " in message else ("settings", "", message)
    env_name = ENV_PREFIX + key.upper().replace(".", "__")
    if _given(overrides, key.split(".")):
        source = "load_settings argument"
    elif env_name in os.environ:
        source = f"environment variable {env_name}"
    elif path is not None:
        source = str(path)
    else:
        source = "defaults"
    if error["type"] == "extra_forbidden":
        return f"{source}: unknown key {key}"
    value = error.get("input")
    shown = "" if isinstance(value, dict | BaseModel) or not error["loc"] else f" (got {value!r})"
    message = message[0].lower() + message[1:]
    return f"{source}: {key}: {message}{shown}"
