"""Prometheus metrics and a health check for the daemon, on [metrics] listen (or
`ethos daemon --metrics HOST:PORT`). Needs the extra: pip install 'ethos[metrics]'.

    GET /metrics   the text exposition format
    GET /healthz   200 while the database answers and the last sweep is no older than
                   interval + max_defer (a standby is healthy); 503 otherwise; one line
                   of JSON saying why

Counters count what this process did; gauges that need the database (row estimates,
the queue's backlog, the last sweep) are read when scraped, the row estimates at most
once a minute and from the planner's statistics, never by counting rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ethos.domain.errors import DatabaseError
from ethos.domain.inputs import host_port
from ethos.services.daemon import Daemon
from ethos.services.ltp import Held, LtpStats
from ethos.services.sweep import SweepReport

log = structlog.get_logger("ethos.adapters.metrics")

ESTIMATES_MAX_AGE_SECONDS = 60.0
DATABASE_TIMEOUT_SECONDS = 2.0


class Readings(Protocol):
    """The database's side of the gauges (the daemon's store)."""

    async def row_estimates(self) -> Any: ...
    async def queue_backlog(self) -> int: ...
    async def dead_letters(self, window_seconds: float) -> tuple[int, int]: ...
    async def last_sweep_finished(self) -> datetime | None: ...
    async def now(self) -> datetime: ...


class Watched(Protocol):
    """What the metrics see of the daemon they serve."""

    @property
    def readings(self) -> Readings | None: ...
    @property
    def leading(self) -> bool: ...
    def ltp_stats(self) -> LtpStats | None: ...
    def ltp_backlog(self) -> int: ...
    def ltp_held(self) -> Held | None: ...
    async def health(self, timeout_seconds: float) -> tuple[int, dict[str, Any]]: ...


@dataclass
class _DatabaseState:
    """What the gauges read from the database, refreshed before each scrape."""

    estimates: list[Mapping[str, Any]] = field(default_factory=list)
    estimated_at: float = float("-inf")
    queue_backlog: int | None = None
    dead_letters: int | None = None
    last_sweep: datetime | None = None
    now: datetime | None = None


class DaemonMetrics:
    def __init__(self, daemon: Watched) -> None:
        self.daemon = daemon
        self.registry = CollectorRegistry()
        self.sweeps = Counter(
            "ethos_sweeps", "Sweeps run by this process.", ["trigger", "mode", "outcome"],
            registry=self.registry,
        )  # fmt: skip
        self.duration = Histogram(
            "ethos_sweep_duration_seconds", "How long sweeps took.", ["mode"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900), registry=self.registry,
        )  # fmt: skip
        self.refreshed = Counter(
            "ethos_rows_refreshed", "Rows whose stored salience a sweep refreshed.", ["table"],
            registry=self.registry,
        )  # fmt: skip
        self.pruned = Counter(
            "ethos_rows_pruned", "Rows pruned by sweeps, by reason (decay or expired).",
            ["table", "reason"], registry=self.registry,
        )  # fmt: skip
        self.held = Counter(
            "ethos_rows_held", "Due rows a sweep left for the next one: another transaction"
            " held them.", ["table"], registry=self.registry,
        )  # fmt: skip
        self.state = _DatabaseState()
        self.registry.register(_StateCollector(self))

    def observe(self, report: SweepReport, trigger: str) -> None:
        self.sweeps.labels(trigger, report.mode, report.status).inc()
        self.duration.labels(report.mode).observe(report.duration_ms / 1000)
        for table, counts in report.tables.items():
            self.refreshed.labels(table).inc(counts.updated - counts.pruned)
            self.pruned.labels(table, "decay").inc(counts.pruned - counts.expired)
            self.pruned.labels(table, "expired").inc(counts.expired)
            self.held.labels(table).inc(counts.held)

    def failed(self, trigger: str, mode: str) -> None:
        self.sweeps.labels(trigger, mode, "error").inc()

    async def refresh(self) -> None:
        """Read the database's side of the gauges (skipped, and left stale, when it is
        away: the scrape still answers)."""
        store = self.daemon.readings
        if store is None:
            return
        state = self.state
        with contextlib.suppress(DatabaseError, TimeoutError):
            async with asyncio.timeout(DATABASE_TIMEOUT_SECONDS):
                if time.monotonic() - state.estimated_at > ESTIMATES_MAX_AGE_SECONDS:
                    state.estimates = await store.row_estimates()
                    state.estimated_at = time.monotonic()
                state.queue_backlog = await store.queue_backlog()
                state.dead_letters = (await store.dead_letters(0))[0]
                state.last_sweep = await store.last_sweep_finished()
                state.now = await store.now()


class _StateCollector(Collector):
    def __init__(self, metrics: DaemonMetrics) -> None:
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        daemon, state = self.metrics.daemon, self.metrics.state
        stats = daemon.ltp_stats()
        retrievals = CounterMetricFamily(
            "ethos_retrievals", "LTP events by what became of them.", labels=["outcome"]
        )
        if stats is not None:
            for outcome in ("recorded", "unmatched", "applied", "skipped", "dropped"):
                retrievals.add_metric([outcome], getattr(stats, outcome))
        yield retrievals
        backlog = GaugeMetricFamily("ethos_ltp_backlog", "LTP events waiting to be applied.",
                                    labels=["buffer"])  # fmt: skip
        backlog.add_metric(["memory"], daemon.ltp_backlog())
        if state.queue_backlog is not None:
            backlog.add_metric(["queue"], state.queue_backlog)
        yield backlog
        if (held := daemon.ltp_held()) is not None:
            yield from _held_families(held)
        if state.dead_letters is not None:
            yield GaugeMetricFamily(
                "ethos_retrieval_dead_letters",
                "Queued retrievals set aside (retrieval_dead_letters): never applied.",
                value=state.dead_letters,
            )  # fmt: skip
        rows = GaugeMetricFamily(
            "ethos_memories", "Rows per table and state (planner estimates, at most a minute"
            " old).", labels=["table", "state"],
        )  # fmt: skip
        for row in state.estimates:
            rows.add_metric([row["table_name"], row["state"]], max(row["estimate"], 0))
        yield rows
        yield GaugeMetricFamily(
            "ethos_leader_lock_held", "1 while this process holds the leader lock.",
            value=int(daemon.leading),
        )  # fmt: skip
        if state.last_sweep is not None and state.now is not None:
            yield GaugeMetricFamily(
                "ethos_last_sweep_age_seconds", "Since the last completed sweep finished.",
                value=(state.now - state.last_sweep).total_seconds(),
            )  # fmt: skip


def _held_families(held: Held) -> Iterator[Metric]:
    """What LTP leaves waiting on rows other transactions hold (decision 0022)."""
    yield GaugeMetricFamily(
        "ethos_ltp_held_events", "LTP events in memory waiting on a row another transaction"
        " holds.", value=held.events.units,
    )  # fmt: skip
    yield GaugeMetricFamily(
        "ethos_ltp_held_agents", "Agents whose queued LTP events wait on a row another"
        " transaction holds.", value=len(held.agents),
    )  # fmt: skip
    yield GaugeMetricFamily(
        "ethos_ltp_held_oldest_seconds", "How long the LTP events waiting longest on a held"
        " row have waited (0: none waits).", value=held.oldest_wait_seconds,
    )  # fmt: skip


async def serve(metrics: DaemonMetrics, listen: str) -> asyncio.Server:
    """Answer GET /metrics and GET /healthz on `listen` (HOST:PORT)."""
    host, port = host_port(listen, "metrics.listen")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await reader.readline()).decode(errors="replace").split()
            while (await reader.readline()).strip():  # the headers: not needed
                pass
            path = request[1] if len(request) > 1 else ""
            if path == "/metrics":
                await metrics.refresh()
                status, body = 200, generate_latest(metrics.registry)
                kind = "text/plain; version=0.0.4; charset=utf-8"
            elif path == "/healthz":
                status, answer = await metrics.daemon.health(DATABASE_TIMEOUT_SECONDS)
                body, kind = (json.dumps(answer) + "\n").encode(), "application/json"
            else:
                status, body, kind = 404, b"not found\n", "text/plain"
            reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
            writer.write(
                f"HTTP/1.1 {status} {reason}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, host, port)
    log.info("metrics_listening", listen=f"{host}:{port}")
    return server


async def observe(daemon: Daemon) -> tuple[DaemonMetrics, asyncio.Server]:
    """/metrics and /healthz of `daemon` on its settings' metrics.listen."""
    metrics = DaemonMetrics(daemon)
    return metrics, await serve(metrics, daemon.settings.metrics.listen)
