"""Hints and bulk loads on a Citus shard (issue 40).

A hint's `made` is the transaction that wrote it on the node that keeps it: a trigger
sets it, in place of the column default. On a cluster the default was computed on the
coordinator for an INSERT sent through it (an LTP flush's hints), in the coordinator's
transaction ids, which mean nothing on a worker: a worker's full sweep, dropping the
hints made before it began, dropped those, and rows retrieved during the sweep were left
without a hint (57 to 105 of 4,000 in test_due_sweeps's run there).

An add of 10,000 rows or more into one shard failed ("a local execution has accessed a
placement"): ethos_rows_added analyzes the statistics after a bulk load, and on a worker
that ANALYZE goes to every shard. On a shard it is left to the node's autovacuum.

Revision ID: 0051
Revises: 0050
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0051"
down_revision = "0050"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0051_hints_and_bulk_loads_on_shards.sql")
