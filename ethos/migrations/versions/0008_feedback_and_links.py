"""Feedback and associations.

Each memory counts how often it was surfaced by a search, confirmed useful, and marked
wrong; a row that negative feedback brings below its threshold is pruned with reason
'feedback' (and, for consolidation, 'merged' and 'manual' are reasons too). Memories
of one agent recalled together are linked: memory_links holds undirected weighted edges
(each pair once, the smaller id first) whose weight decays like a memory's, computed
from the weight and the moment it was set; fades_at says when it falls below the
prune weight, for the sweep to remove it.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

from ethos.migrations import execute_script

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

MEMORY_TABLES = ("memory_vectors", "episodic_traces", "semantic_facts")
REASONS = "'decay', 'expired', 'feedback', 'merged', 'manual'"
FIRST_REASONS = "'decay', 'expired'"

COUNTERS = """
ALTER TABLE {table}
    ADD COLUMN surfaced_count integer NOT NULL DEFAULT 0 CHECK (surfaced_count >= 0),
    ADD COLUMN useful_count integer NOT NULL DEFAULT 0 CHECK (useful_count >= 0),
    ADD COLUMN wrong_count integer NOT NULL DEFAULT 0 CHECK (wrong_count >= 0),
    DROP CONSTRAINT {table}_prune_reason_check,
    ADD CONSTRAINT {table}_prune_reason_check CHECK (prune_reason IN ({reasons}));
"""

LINKS = """
CREATE TABLE memory_links (
    agent_id      text NOT NULL,
    a_table       text NOT NULL,
    a_id          uuid NOT NULL,
    b_table       text NOT NULL,
    b_id          uuid NOT NULL,
    weight        double precision NOT NULL CHECK (weight > 0 AND weight <= 1),
    weighted_at   timestamptz NOT NULL,  -- when the weight was set: it decays from there
    co_retrievals integer NOT NULL DEFAULT 0,
    useful_count  integer NOT NULL DEFAULT 0,
    wrong_count   integer NOT NULL DEFAULT 0,
    fades_at      timestamptz NOT NULL,  -- when it falls below links.prune_weight
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (a_id, b_id),
    CHECK (a_id < b_id)  -- each pair once (ids are unique across the memory tables)
);
CREATE INDEX memory_links_b_idx ON memory_links (b_id);
CREATE INDEX memory_links_fades_at_idx ON memory_links (fades_at);

ALTER TABLE ethos_settings
    ADD COLUMN links_tau_days double precision NOT NULL DEFAULT 30,
    ADD COLUMN links_prune_weight double precision NOT NULL DEFAULT 0.05;

-- Every link with its weight now, strongest first within each agent.
CREATE VIEW ethos_links AS
    SELECT l.agent_id, l.a_table, l.a_id, l.b_table, l.b_id,
           l.weight * exp(greatest(-date_part('epoch', now() - l.weighted_at) / 86400.0
                                   / s.links_tau_days, -700)) AS weight,
           l.co_retrievals, l.useful_count, l.wrong_count, l.weighted_at, l.created_at,
           rank() OVER (PARTITION BY l.agent_id ORDER BY l.weight
                        * exp(greatest(-date_part('epoch', now() - l.weighted_at) / 86400.0
                                       / s.links_tau_days, -700)) DESC) AS rank_in_agent
    FROM memory_links AS l CROSS JOIN ethos_settings AS s
    WHERE l.fades_at > now();
"""


def upgrade() -> None:
    for table in MEMORY_TABLES:
        execute_script(COUNTERS.format(table=table, reasons=REASONS))
    execute_script(LINKS)


def downgrade() -> None:
    execute_script(
        """DROP VIEW ethos_links; DROP TABLE memory_links;
           ALTER TABLE ethos_settings DROP COLUMN links_tau_days,
                                      DROP COLUMN links_prune_weight;"""
    )
    for table in MEMORY_TABLES:
        execute_script(
            f"""UPDATE {table} SET prune_reason = 'decay'
                WHERE prune_reason NOT IN ({FIRST_REASONS});
                ALTER TABLE {table} DROP COLUMN surfaced_count, DROP COLUMN useful_count,
                    DROP COLUMN wrong_count, DROP CONSTRAINT {table}_prune_reason_check,
                    ADD CONSTRAINT {table}_prune_reason_check
                        CHECK (prune_reason IN ({FIRST_REASONS}));"""
        )
