"""The `ethos` command. Each subcommand is a small function over the Engine API
(memories, operations, lifecycle, policies, servers of this package), built into a
parser (parser) and printed as text or JSON (output); errors become one line on stderr
and a non-zero exit code."""

from __future__ import annotations

import asyncio
import json
import sys

from ethos import logs
from ethos.adapters.cli.output import as_flags
from ethos.adapters.cli.parser import build_parser
from ethos.domain.errors import EthosError, NotFoundError
from ethos.settings import load_settings

__all__ = ["build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
        logs.configure(settings.logging)
        code: int = asyncio.run(args.func(args, settings))
        return code
    except NotFoundError as exc:
        if getattr(args, "json", False):  # which ids, for a caller that reads the JSON
            print(json.dumps({"error": as_flags(str(exc)), "unknown_ids": exc.ids}))
        return _fail(as_flags(str(exc)))
    except EthosError as exc:
        return _fail(as_flags(str(exc)))
    except json.JSONDecodeError as exc:
        return _fail(f"invalid JSON: {exc}")
    except OSError as exc:
        return _fail(str(exc))
    except KeyboardInterrupt:
        return 130


def _fail(message: str) -> int:
    line = logs.redact_secrets(message.splitlines()[0]) if message else "failed"
    print(f"ethos: error: {line}", file=sys.stderr)
    return 1
