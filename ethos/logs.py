"""structlog configuration, done once at the CLI entry; library modules only get a logger."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

from ethos.settings import LoggingSettings

_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")

# What looks like a credential in any text ethos prints or logs (a provider's error
# body may echo the request's headers): the secret part is replaced by ***.
_SECRETS = (
    (re.compile(r"(?i)\b(bearer|basic)\s+[\w.~+/=-]{8,}"), r"\1 ***"),
    (re.compile(r"\bsk-[\w-]{4,}"), "sk-***"),
    (
        re.compile(
            r"(?i)\b(api[_-]?key|apikey|access[_-]?token|token|secret|password|passwd)"
            r"(\"?'?\s*[=:]\s*\"?'?)[^\s\"'&,;}]+"
        ),
        r"\1\2***",
    ),
    (re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s@]+@", re.IGNORECASE), r"\1***@"),
)


def redact(url: str) -> str:
    """A URL fit for a log line: the password, if any, replaced."""
    return _PASSWORD.sub(r"\1***@", url)


def redact_secrets(text: str) -> str:
    """Text fit for a message or a log line: keys, tokens and URL userinfo replaced."""
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def _redact_event(_: Any, __: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    return {k: redact_secrets(v) if isinstance(v, str) else v for k, v in event.items()}


def library_default() -> None:
    """Used as a library (no CLI, no structlog configuration of the caller's): events go
    to the standard logging module under their module's name, so the caller's logging
    configuration decides, and nothing is printed unless the caller configures logging.
    (Without a handler on the way, Python's last resort would print a warning's bare
    event name to stderr: `ltp_skipped`, after a get and a delete of one item.)"""
    library = logging.getLogger("ethos")
    if not any(isinstance(handler, logging.NullHandler) for handler in library.handlers):
        library.addHandler(logging.NullHandler())
    if structlog.is_configured():
        return
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.processors.format_exc_info,
            _redact_event,
            structlog.stdlib.render_to_log_kwargs,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )


def configure(settings: LoggingSettings) -> None:
    """ethos's events, and the standard logging records of the libraries under it (the
    driver's "connection lost" with its traceback, say), rendered alike: one line each."""
    level = logging.getLevelNamesMapping()[settings.level.upper()]
    as_json = settings.format == "json" or (settings.format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if as_json else structlog.dev.ConsoleRenderer()
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, _redact_event, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _redact_event,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(max(level, logging.WARNING))  # the libraries' chatter stays out
