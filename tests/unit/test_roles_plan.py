"""The plan `ethos roles` applies, read without a database."""

from ethos.domain.roles import MEMORY_NAMES, NOT_AHEAD, OWN, Roles, plan


def _plan() -> list[str]:
    roles = Roles(app="app", eraser="eraser", agents=(("agent_a", "a"),))
    columns = dict.fromkeys(MEMORY_NAMES, ("id", "agent_id", "created_at", "content"))
    return plan(roles, "ethos", columns, existing=set())


def test_every_row_policy_is_permissive() -> None:
    """Citus gives each shard a restrictive policy as a permissive one (13.2: its
    CREATE POLICY for a shard drops AS RESTRICTIVE), where it would let in any row that
    passes the restriction alone: another agent's, on the cluster."""
    assert not [s for s in _plan() if "RESTRICTIVE" in s]


def test_an_agent_adds_only_its_own_memories_from_now_on() -> None:
    adds = [s for s in _plan() if "FOR INSERT TO app_agents" in s and "retrieval_queue" not in s]
    assert len(adds) == len(MEMORY_NAMES)
    assert all(f"WITH CHECK ({OWN} AND {NOT_AHEAD})" in s for s in adds)
