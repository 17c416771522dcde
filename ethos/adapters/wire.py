"""The one JSON encoder of every front end: the CLI's --json, the HTTP API's answers
and refusals, the MCP server's text. The engine's typed answers give their JSON with
as_dict(); what is left in them (the monitoring views' rows, audit rows) is written
here: moments as ISO 8601, ids as text, PostgreSQL numerics as numbers."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from decimal import Decimal
from typing import Any


def dumps(data: Any, *, compact: bool = False) -> str:
    """`data` as JSON text; `compact`: without spaces (what a server sends)."""
    separators = (",", ":") if compact else None
    return json.dumps(data, default=_plain, separators=separators)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
