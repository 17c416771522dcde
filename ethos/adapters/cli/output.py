"""How the commands print: text for a reader, or JSON (--json) with moments as ISO
8601 and numbers as numbers; the small tables and durations they share."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime
from typing import Any

from ethos.adapters import wire


def emit(args: argparse.Namespace, data: dict[str, Any], text: str) -> None:
    print(wire.dumps(data) if getattr(args, "json", False) else text)


def ltp_exit(dropped: int) -> int:
    if dropped:
        print(f"ethos: error: {dropped} retrievals could not be applied", file=sys.stderr)
        return 1
    return 0


def table_text(title: str, rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """A plain aligned table."""
    if not rows:
        return [f"{title}: none"]
    cells = [[cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    line = "  ".join
    return [
        f"{title}:",
        "  " + line(c.ljust(w) for c, w in zip(columns, widths, strict=True)),
        *("  " + line(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in cells),
    ]


def cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if value < 10 else f"{value:,.0f}"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}"
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "..."


# A parameter whose flag is not its name with dashes (the rest: --pruned-before, ...).
FLAGS = {"ids": "--id", "agents": "--agent-role", "tables": "--table"}
PARAMETER = re.compile(r"`([a-z][a-z_]*)`")


def as_flags(message: str) -> str:
    """An error's parameters (quoted `like_this`, ethos.domain.errors) as this command's flags."""
    return PARAMETER.sub(lambda m: FLAGS.get(m[1], "--" + m[1].replace("_", "-")), message)
