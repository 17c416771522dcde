"""Long-term potentiation's rules: what a flush of recorded events writes, and in which
order. Events of one row at one moment coalesce into one write; rows take their events
in time order, in rounds; a retrieved vector strengthens the memory it embeds; links
between memories recalled together learn last. A flush is applied exactly once per
flush id; a batch the database refuses for good is applied row by row and what is
refused set aside (retrieval_dead_letters), never silently lost. A flush waits on no row
another transaction holds (an agent role may hold its own for hours): the events of that
row's agent are left for a later flush, and applied once it is free (decision 0022).
"""

from __future__ import annotations

import itertools
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import structlog

from ethos.db.store import LinkRound, LtpFlush, Row, Store
from ethos.domain.errors import DatabaseError, LockTimeoutError, TransientDatabaseError
from ethos.domain.tables import TableSpec, table_spec
from ethos.settings import Settings

log = structlog.get_logger("ethos.services.ltp")

# "surfaced": a search hit its own words or vector matched (a retrieval, per
# ltp.on_search); "unmatched": a hit found only through others (the turns beside it, a
# link), which is counted as surfaced and never reinforces (decision record 0021).
Kind = Literal["retrieval", "surfaced", "unmatched", "useful", "wrong"]
KINDS: tuple[Kind, ...] = ("retrieval", "surfaced", "unmatched", "useful", "wrong")
# A memory events are for: its table, its id, and its agent (None: every agent's memory
# of the id, for a caller that names no agent).
Key = tuple[TableSpec, uuid.UUID, str | None]
Member = tuple[uuid.UUID, str | None]  # of one table
Owned = tuple[TableSpec, uuid.UUID, str]  # a memory found, with its agent


@dataclass
class Events:
    """What happened to one memory at one moment."""

    retrievals: int = 0  # reinforcing: LTP's count, anchor and boost
    useful: int = 0  # of them, confirmed useful by feedback
    wrong: int = 0  # marked wrong: long-term depression
    surfaced: int = 0  # returned by a search
    unmatched: int = 0  # of them, found only through others: never reinforcing
    units: int = 0  # the calls it stands for (what `applied` and `skipped` count)

    def add(self, other: Events) -> None:
        # (field by field: a loop over the fields took a quarter of a buffered flush's
        # Python time)
        self.retrievals += other.retrievals
        self.useful += other.useful
        self.wrong += other.wrong
        self.surfaced += other.surfaced
        self.unmatched += other.unmatched
        self.units += other.units

    @property
    def changes_curve(self) -> bool:
        return self.retrievals + self.wrong > 0


@dataclass(frozen=True)
class Group:
    """Memories recalled together by one search, or given feedback in one call: their
    pairs' links learn from it."""

    kind: Literal["co", "useful", "wrong"]
    at: datetime
    members: tuple[Key, ...]

    @property
    def pairs(self) -> int:
        return len(self.members) * (len(self.members) - 1) // 2


# Buffered: (table, id, agent) -> {moment: Events}.
Pending = dict[Key, dict[datetime, Events]]
Rows = dict[Member, dict[datetime, Events]]
OwnRows = dict[tuple[uuid.UUID, str], dict[datetime, Events]]  # each with its agent named


@dataclass
class Deferred:
    """What a flush left for a later one, and whose: the events (and the groups they
    teach links in) of agents one of whose memories another transaction held."""

    pending: Pending = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    agents: set[str | None] = field(default_factory=set)  # None: a caller naming none

    @property
    def units(self) -> int:
        return sum(e.units for m in self.pending.values() for e in m.values())

    @property
    def tables(self) -> list[str]:
        return sorted({spec.name for spec, _, _ in self.pending})


class RowsHeld(Exception):
    """Rows a flush was about to write that another transaction holds: (id, agent)."""

    def __init__(self, spec: TableSpec, rows: list[tuple[uuid.UUID, str]]) -> None:
        super().__init__(f"{len(rows)} rows of {spec.name} held by another transaction")
        self.spec = spec
        self.rows = rows


@dataclass
class _Holds:
    """Which events wait: those of the agents a held row is of; naming no agent, those
    of a held row's id, or (held through a vector's source) every one."""

    agents: set[str] = field(default_factory=set)
    ids: set[tuple[TableSpec, uuid.UUID]] = field(default_factory=set)
    unnamed: bool = False

    def holds(self, key: Key) -> bool:
        spec, memory_id, agent = key
        if agent is not None:
            return agent in self.agents
        return self.unnamed or (spec, memory_id) in self.ids

    def add(self, held: RowsHeld, pending: Pending) -> bool:
        """The held rows' events wait too; False if no event more does (a flush that
        keeps meeting them goes key by key)."""
        before = sum(map(self.holds, pending))
        self.agents.update(agent for _, agent in held.rows)
        self.ids.update((held.spec, memory_id) for memory_id, _ in held.rows)
        if sum(map(self.holds, pending)) == before and not self.unnamed:
            self.unnamed = True
        return sum(map(self.holds, pending)) > before

    def add_key(self, key: Key) -> None:
        spec, memory_id, agent = key
        if agent is not None:
            self.agents.add(agent)
        else:
            self.ids.add((spec, memory_id))


@dataclass
class LtpResult:
    applied: int = 0
    skipped: int = 0
    promoted: int = 0
    pruned: int = 0
    links: int = 0
    set_aside: int = 0
    dropped: int = 0
    held: int = 0  # left for a later flush: a row of their agent was held
    replayed: bool = False  # this flush had been applied already (an in-doubt commit)

    def add(self, other: LtpResult) -> None:
        for name in COUNTED:
            setattr(self, name, getattr(self, name) + getattr(other, name))


COUNTED = ("applied", "skipped", "promoted", "pruned", "links", "set_aside", "dropped",
           "held")  # fmt: skip


async def apply_retrievals(
    store: Store,
    pending: Pending,
    flush_id: uuid.UUID,
    groups: Iterable[Group] = (),
    deferred: Deferred | None = None,
) -> LtpResult:
    """Apply buffered events in one transaction, exactly once per flush id.

    Tables whose rows embed others (vectors) go first: a retrieval of a vector also
    strengthens the episode or fact it embeds, at the same moment. Those
    reinforcements join the target rows' own events, so every row takes its events in
    time order, as one after another. Links come last.

    What waits on a held row is written into `deferred` before the COMMIT: a retry of
    this flush id that finds it applied (an in-doubt COMMIT) leaves the caller exactly
    that to apply later.
    """
    deferred = Deferred() if deferred is None else deferred
    async with store.ltp_flush(flush_id) as flush:
        if flush is None:
            units = sum(e.units for m in pending.values() for e in m.values())
            return LtpResult(applied=units - deferred.units, held=deferred.units, replayed=True)
        result, held = await _apply_or_set_aside(flush, store.settings, pending, list(groups))
        result.held = held.units
        deferred.pending, deferred.groups, deferred.agents = (
            held.pending,
            held.groups,
            held.agents,
        )
        return result


# Why a queued event dated ahead of the database's clock is set aside, not applied: a
# retrieval is recorded when it happens, and one dated decades ahead would hold its memory
# at full strength.
AHEAD = "a moment ahead of the database's clock"


class _HeldAgents(Exception):
    """A drain met rows of these agents held: its transaction is undone, and the batch
    popped again without their events, which stay queued."""

    def __init__(self, agents: set[str]) -> None:
        super().__init__(", ".join(sorted(agents)))
        self.agents = agents


async def apply_queued(store: Store, limit: int, held: set[str] | None = None) -> LtpResult | None:
    """Apply the oldest `limit` events of the durable queue (ethos_record_retrieval,
    durable buffers) in the transaction that deletes them; None if it is empty. Those
    dated ahead of the clock are set aside. The events of agents in `held` stay queued,
    and so do those of an agent one of whose memories another transaction holds: its
    agent joins `held`."""
    settings = store.settings
    held = set() if held is None else held
    while True:
        try:
            async with store.ltp_queue(limit, sorted(held)) as (flush, rows):
                if not rows:
                    return None
                pending, groups = _queued([row for row in rows if not row["ahead"]], settings)
                result, waiting = await _apply_or_set_aside(flush, settings, pending, groups)
                if waiting.agents:  # undone: popped again without them
                    raise _HeldAgents({agent for agent in waiting.agents if agent is not None})
                ahead, _ = _queued([row for row in rows if row["ahead"]], settings)
                for key, moments in ahead.items():
                    result.add(await _set_aside(flush, settings, key, moments, AHEAD))
                return result
        except _HeldAgents as exc:
            held.update(exc.agents)


def _queued(rows: list[Row], settings: Settings) -> tuple[Pending, list[Group]]:
    """Popped events as a flush's (each for its agent's memory, where it names one), and
    the groups they were recorded in."""
    pending: Pending = defaultdict(dict)
    # a group of one agent's events (no one else's event joins it by naming its id)
    together: dict[tuple[uuid.UUID, str | None], list[tuple[Key, datetime, str]]]
    together = defaultdict(list)
    for row in rows:
        key = (table_spec(row["table_name"]), row["memory_id"], row["agent_id"])
        event = event_of(row["kind"], settings, row["n"])
        pending[key].setdefault(row["at"], Events()).add(event)
        for grp in row["grps"] or ():
            together[(grp, row["agent_id"])].append((key, row["at"], row["kind"]))
    groups = [
        group
        for members in together.values()
        if (group := group_of([key for key, _, _ in members], members[0][1], members[0][2],
                              settings))
    ]  # fmt: skip
    return pending, groups


async def _apply_or_set_aside(
    flush: LtpFlush, settings: Settings, pending: Pending, groups: list[Group]
) -> tuple[LtpResult, Deferred]:
    """_apply, and what waits: the events of agents one of whose rows another transaction
    holds are left out (_apply finds such rows as it locks them, and starts again without
    them). If the database refuses the batch for good (a row that a constraint or its
    arithmetic refuses), each memory's events are applied on their own and those refused
    are set aside in retrieval_dead_letters with the reason: one bad event does not hold
    back, or take down, the events of other memories and agents."""
    holds = _Holds()
    while True:
        now = {key: moments for key, moments in pending.items() if not holds.holds(key)}
        try:
            async with flush.savepoint():
                result = await _apply(flush, settings, now, _free(groups, holds))
            return result, _deferred(pending, groups, holds, set(now))
        except RowsHeld as exc:
            if holds.add(exc, pending):
                continue
            reason = str(exc)
        except LockTimeoutError as exc:  # what a trigger writes, held past lock_timeout
            reason = str(exc)
        except TransientDatabaseError:
            raise
        except DatabaseError as exc:
            if await flush.distribution_changed():  # retried, routed to the agents' shards
                raise TransientDatabaseError(
                    f"the tables were distributed meanwhile: {exc}"
                ) from exc
            reason = str(exc)
        break
    log.warning("ltp_batch_refused", error=reason, rows=len(pending))
    result = LtpResult()
    refused: set[Key] = set()
    applied: set[Key] = set()
    for key, moments in sorted(now.items(), key=lambda i: (i[0][0].name, i[0][1], i[0][2] or "")):
        if holds.holds(key):
            continue
        try:
            async with flush.savepoint():
                result.add(await _apply(flush, settings, {key: moments}, ()))
            applied.add(key)
        except TransientDatabaseError:
            raise
        except (RowsHeld, LockTimeoutError):
            holds.add_key(key)
        except DatabaseError as exc:
            refused.add(key)
            result.add(await _set_aside(flush, settings, key, moments, str(exc)))
    kept = [group for group in _free(groups, holds) if refused.isdisjoint(group.members)]
    try:
        async with flush.savepoint():
            result.links += await _apply_links(flush, kept, settings.links.learning_rate)
    except TransientDatabaseError:
        raise
    except DatabaseError as exc:  # links are learnt again from the next recall together
        pairs = sum(group.pairs for group in kept)
        log.error("ltp_links_refused", error=str(exc), pairs=pairs)
        result.dropped += pairs
    return result, _deferred(pending, groups, holds, applied | refused)


def _free(groups: list[Group], holds: _Holds) -> list[Group]:
    """The groups none of whose members waits."""
    return [group for group in groups if not any(map(holds.holds, group.members))]


def _deferred(pending: Pending, groups: list[Group], holds: _Holds, done: set[Key]) -> Deferred:
    """The events not applied (nor set aside) and the groups of those that wait."""
    waiting = {key: moments for key, moments in pending.items() if key not in done}
    return Deferred(
        pending=waiting,
        groups=[group for group in groups if any(map(holds.holds, group.members))],
        agents={agent for _, _, agent in waiting},
    )


async def _set_aside(
    flush: LtpFlush, settings: Settings, key: Key, moments: dict[datetime, Events], reason: str
) -> LtpResult:
    spec, memory_id, agent = key
    units = sum(e.units for e in moments.values())
    try:
        async with flush.savepoint():
            await flush.set_aside(spec, agent, memory_id, kinds_of(moments, settings), reason)
    except TransientDatabaseError:
        raise
    except DatabaseError as exc:  # e.g. a role that may not write dead letters
        log.error("ltp_update_failed", table=spec.name, id=str(memory_id), error=reason,
                  set_aside_error=str(exc), dropped=units, permanent=True)  # fmt: skip
        return LtpResult(dropped=units)
    log.error("ltp_events_set_aside", table=spec.name, id=str(memory_id), error=reason,
              count=units)  # fmt: skip
    return LtpResult(set_aside=units)


async def _apply(
    flush: LtpFlush, settings: Settings, pending: Pending, groups: Iterable[Group]
) -> LtpResult:
    by_table: dict[TableSpec, Rows] = defaultdict(dict)
    for (spec, memory_id, agent), moments in pending.items():
        by_table[spec][(memory_id, agent)] = moments
    result = LtpResult()
    for spec in sorted(by_table, key=lambda s: s.name):
        returned = await _apply_rounds(flush, spec, by_table[spec])
        _account(result, spec, by_table[spec], returned)
    result.links = await _apply_links(flush, list(groups), settings.links.learning_rate)
    if result.applied:
        await flush.touch_retrieval_activity()
    return result


def event_of(kind: str, settings: Settings, n: int = 1) -> Events:
    """What n recorded events of `kind` do to their memory."""
    if kind == "surfaced":
        reinforce = settings.ltp.on_search == "reinforce"
        return Events(retrievals=n * int(reinforce), surfaced=n, units=n)
    if kind == "unmatched":
        return Events(surfaced=n, unmatched=n, units=n)
    if kind == "useful":
        return Events(retrievals=n, useful=n, units=n)
    if kind == "wrong":
        return Events(wrong=n, units=n)
    return Events(retrievals=n, units=n)


def kinds_of(
    moments: dict[datetime, Events], settings: Settings
) -> list[tuple[datetime, Kind, int]]:
    """The recorded events that `moments` add up, as (moment, kind, how many): the
    inverse of event_of."""
    reinforcing = settings.ltp.on_search == "reinforce"
    out: list[tuple[datetime, Kind, int]] = []
    for at, e in sorted(moments.items()):
        matched = e.surfaced - e.unmatched
        plain = e.retrievals - e.useful - (matched if reinforcing else 0)
        counts = {"retrieval": plain, "useful": e.useful, "wrong": e.wrong,
                  "surfaced": matched, "unmatched": e.unmatched}  # fmt: skip
        out += [(at, kind, counts[kind]) for kind in KINDS if counts[kind] > 0]
    return out


def group_of(keys: Iterable[Key], at: datetime, kind: str, settings: Settings) -> Group | None:
    """The link-learning group of memories recorded in one call, if they teach links. A
    call returns or names at most limits.k or limits.ids memories: a larger group (a
    queue written by hand) teaches none, as its pairs would grow with its square. Hits
    found only through others ("unmatched") teach none: they were not recalled."""
    members = tuple(dict.fromkeys(keys))
    learning = settings.links.learning_rate > 0
    if len(members) < 2 or kind in ("retrieval", "unmatched") or (kind != "wrong" and not learning):
        return None
    most = max(settings.limits.k, settings.limits.ids)
    if len(members) > most:
        log.warning("ltp_group_too_large", members=len(members), most=most, kind=kind)
        return None
    return Group("co" if kind == "surfaced" else kind, at, members)  # type: ignore[arg-type]


async def _apply_rounds(flush: LtpFlush, spec: TableSpec, rows: Rows) -> list[Row]:
    """The rows' rounds (_apply_agent_rounds), a group of agents at a time
    (LtpFlush.agent_groups), each statement naming the agents it writes. The agents of
    ids recorded with none are looked up first (live rows only: an id none holds live
    stands for no memory, and its events are skipped as any unknown row's)."""
    unnamed = sorted({memory_id for memory_id, agent in rows if agent is None})
    owners = await flush.agents(spec, unnamed) if unnamed else {}
    owned: OwnRows = {}
    for (memory_id, agent), moments in rows.items():
        for owner in owners.get(memory_id, []) if agent is None else [agent]:
            _add(owned, (memory_id, owner), moments)
    returned: list[Row] = []
    for agents in await flush.agent_groups(agent for _, agent in owned):
        group = set(agents)
        theirs = {member: moments for member, moments in owned.items() if member[1] in group}
        returned += await _apply_agent_rounds(flush, spec, theirs, agents)
    return returned


async def _apply_agent_rounds(
    flush: LtpFlush, spec: TableSpec, rows: OwnRows, agents: list[str]
) -> list[Row]:
    """Round i holds the i-th moment of every row whose curve changes, so a row is
    written in time order, exactly as one event after another. Hits that only count
    (no curve change) are added up in one statement. All of them are locked first. The
    rows are of `agents` (each member names one)."""
    members = sorted(rows)
    held = await flush.lock(spec, sorted({memory_id for memory_id, _ in members}), agents)
    if held:
        raise RowsHeld(spec, held)
    ordered = {
        member: sorted((at, e) for at, e in rows[member].items() if e.changes_curve)
        for member in members
    }
    returned: list[Row] = []
    for depth in range(max((len(m) for m in ordered.values()), default=0)):
        level = [(i, m[depth]) for i, m in ordered.items() if depth < len(m)]
        returned += await flush.strengthen(
            spec,
            ids=[memory_id for (memory_id, _), _ in level],
            owners=[owner for (_, owner), _ in level],
            counts=[e.retrievals for _, (_, e) in level],
            useful=[e.useful for _, (_, e) in level],
            wrong=[e.wrong for _, (_, e) in level],
            surfaced=[e.surfaced for _, (_, e) in level],
            moments=[at for _, (at, _) in level],
            agents=agents,
        )
    only_counted = {
        member: sum(e.surfaced for e in rows[member].values() if not e.changes_curve)
        for member in members
    }
    only_counted = {member: c for member, c in only_counted.items() if c}
    if only_counted:
        returned += [
            {"id": row["id"], "agent_id": row["agent_id"], "n": 0, "pruned": False}
            for row in await flush.surface(
                spec,
                [memory_id for memory_id, _ in only_counted],
                [owner for _, owner in only_counted],
                list(only_counted.values()),
                agents,
            )
        ]
    return returned


def _add(rows: OwnRows, member: tuple[uuid.UUID, str], moments: dict[datetime, Events]) -> None:
    """A member's events added to those rows holds for it."""
    target = rows.setdefault(member, {})
    for at, events in moments.items():
        target.setdefault(at, Events()).add(events)


def _account(result: LtpResult, spec: TableSpec, own: Rows, returned: list[Row]) -> None:
    """Events of rows that were found count as applied; those of unknown or pruned
    rows as skipped, and are logged."""
    written_ids = {row["id"] for row in returned}
    # (with their agents only where a member names one: most flushes name none)
    named = any(agent is not None for _, agent in own)
    written = {(row["id"], row["agent_id"]) for row in returned} if named else set()

    def found(member: Member) -> bool:
        return member in written if member[1] is not None else member[0] in written_ids

    result.applied += sum(e.units for i, m in own.items() if found(i) for e in m.values())
    result.pruned += len({(row["id"], row["agent_id"]) for row in returned if row["pruned"]})
    promoted = [
        row
        for row in returned
        if row.get("old_policy") is not None and row["policy"] != row["old_policy"]
    ]
    result.promoted += len(promoted)
    for row in promoted:
        log.debug(
            "memory_promoted", table=spec.name, id=str(row["id"]),
            policy=row["policy"], old_policy=row["old_policy"],
        )  # fmt: skip
    missing = [str(member[0]) for member in own if not found(member)]
    if missing:
        result.skipped += sum(e.units for i, m in own.items() if not found(i)
                              for e in m.values())  # fmt: skip
        log.warning("ltp_skipped", table=spec.name, count=len(missing), ids=missing[:5])


async def _apply_links(flush: LtpFlush, groups: list[Group], learning_rate: float) -> int:
    """Pairs of each group's memories that belong to one agent, in rounds by moment
    (with link learning off, only the weakening by wrong feedback)."""
    groups = [g for g in groups if learning_rate > 0 or g.kind == "wrong"]
    if not groups:
        return 0
    # The owners of the live memories, looked up once a table: of the agents named with
    # them, a group of them at a time, and of any agent for the ids named with none.
    named: dict[TableSpec, dict[str, set[uuid.UUID]]] = defaultdict(lambda: defaultdict(set))
    unnamed: dict[TableSpec, set[uuid.UUID]] = defaultdict(set)
    for group in groups:
        for spec, memory_id, agent in group.members:
            if agent is None:
                unnamed[spec].add(memory_id)
            else:
                named[spec][agent].add(memory_id)
    owners: dict[tuple[TableSpec, uuid.UUID], set[str]] = defaultdict(set)
    lookups: list[tuple[TableSpec, set[uuid.UUID], list[str] | None]]
    lookups = [(spec, ids, None) for spec, ids in unnamed.items()]
    for spec, theirs in named.items():
        for group_agents in await flush.agent_groups(theirs):
            ids = set().union(*(theirs[agent] for agent in group_agents))
            lookups.append((spec, ids, group_agents))
    for spec, ids, of in lookups:
        for memory_id, found in (await flush.agents(spec, sorted(ids), of)).items():
            owners[(spec, memory_id)].update(found)
    # (agent, a, b, moment) -> [co, useful, wrong]; a before b by id.
    counts: dict[tuple[str, Owned, Owned, datetime], list[int]] = {}
    for group in groups:
        column = _PAIR_COLUMN[group.kind]
        live: list[Owned] = sorted(
            {
                (spec, memory_id, owner)
                for spec, memory_id, agent in group.members
                for owner in owners[(spec, memory_id)]
                if agent in (None, owner)
            },
            key=lambda m: (m[1], m[2]),
        )
        for a, b in itertools.combinations(live, 2):
            agent = a[2]
            if agent != b[2]:
                continue
            key = (agent, a, b, group.at)
            if key not in counts:
                counts[key] = [0, 0, 0]
            counts[key][column] += 1
    # Round i holds the i-th moment of each pair; pairs in id order, every flush alike.
    rounds: list[list[tuple[str, Owned, Owned, datetime]]] = []
    last, depth = None, 0
    for key in sorted(counts, key=lambda k: (k[1][1], k[2][1], k[3])):
        pair = (key[1][1], key[2][1])
        depth = depth + 1 if pair == last else 0
        last = pair
        if depth == len(rounds):
            rounds.append([])
        rounds[depth].append(key)
    written = 0
    for level in rounds:
        written += await flush.link(
            LinkRound(
                agents=[agent for agent, _, _, _ in level],
                a_tables=[a[0].name for _, a, _, _ in level],
                a_ids=[a[1] for _, a, _, _ in level],
                b_tables=[b[0].name for _, _, b, _ in level],
                b_ids=[b[1] for _, _, b, _ in level],
                co=[counts[key][0] for key in level],
                useful=[counts[key][1] for key in level],
                wrong=[counts[key][2] for key in level],
                moments=[at for _, _, _, at in level],
            ),
            learning_rate=learning_rate,
        )
    return written


_PAIR_COLUMN = {"co": 0, "useful": 1, "wrong": 2}
