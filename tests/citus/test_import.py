"""`ethos import`'s writes (Engine.import_lines: one INSERT … SELECT FROM unnest a table
and batch, of many agents) on a database distributed by agent write what they write on
one server (issue 66): the memories, their automatic importance, the statistics and
the sweep's hints."""

from __future__ import annotations

import json

from ethos.services.engine import Engine
from ethos.settings import DatabaseSettings, Settings
from tests.citus.cluster import AGENTS, DISTRIBUTED, MIGRATED, Copy, direction
from tests.citus.test_write_path import written

LINES = [
    json.dumps(line)
    for agent in AGENTS
    for line in (
        {"table": "episode", "agent": agent, "content": f"where did {agent} sail?"},
        {"table": "episode", "agent": agent, "content": f"{agent} sailed the northern lake",
         "emotional_tone": 0.5},
        {"table": "fact", "agent": agent, "content": f"{agent} fears storms", "importance": 0.9},
        {"table": "vector", "agent": agent, "content": f"{agent}'s vector",
         "embedding": direction(len(agent))},
    )
]  # fmt: skip


async def test_an_import_writes_what_it_writes_on_one_server(cluster_copy: Copy) -> None:
    single, citus_database = await cluster_copy(MIGRATED), await cluster_copy(DISTRIBUTED)
    for url in (single, citus_database):
        settings = Settings(database=DatabaseSettings(url=url))
        async with Engine(settings, url=url, check_settings=False) as engine:
            imported = await engine.import_lines(lambda: LINES, batch_size=5)
        assert sum(imported.by_table.values()) == len(LINES)
    one, many = await written(single), await written(citus_database)
    assert one.keys() == many.keys()
    for key in one:
        assert one[key] == many[key], key
    assert len(many["episodic_traces"]) == 2 * len(AGENTS)
