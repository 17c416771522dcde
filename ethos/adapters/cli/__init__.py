"""The `ethos` command. Each subcommand is a small function over the Engine API
(memories, operations, lifecycle, policies, servers of this package), built into a
parser (parser) and printed as text or JSON (output); errors become one line on stderr
and a non-zero exit code."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from ethos import logs
from ethos.adapters.cli.output import as_flags
from ethos.adapters.cli.parser import build_parser
from ethos.domain.errors import EthosError, NotFoundError
from ethos.settings import load_settings

__all__ = ["build_parser", "main"]


# The exit code of a command whose reader went away (`ethos curve | head`): a shell's
# for a process ended by SIGPIPE, as `seq 1000000 | head` gives (128 + 13).
CLOSED_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    try:
        return _run(argv)
    except BrokenPipeError:
        # Not an error: the reader has what it wanted. What is still buffered for stdout
        # goes nowhere, so that Python's flush at exit does not complain either.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return CLOSED_PIPE


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)  # --help prints: a closed pipe here too
    try:
        settings = load_settings(args.config)
        logs.configure(settings.logging)
        code: int = asyncio.run(args.func(args, settings))
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        raise
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
