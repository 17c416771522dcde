"""structlog configuration, done once at the CLI entry; library modules only get a logger."""

from __future__ import annotations

import logging
import re
import sys

import structlog

from ethos.settings import LoggingSettings

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact(url: str) -> str:
    """A URL fit for a log line: the password, if any, replaced."""
    return _PASSWORD.sub(r"\1***@", url)


def configure(settings: LoggingSettings) -> None:
    level = logging.getLevelNamesMapping()[settings.level.upper()]
    as_json = settings.format == "json" or (settings.format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
