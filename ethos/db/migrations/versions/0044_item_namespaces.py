"""The LangGraph items' index orders their agents byte by byte (COLLATE "C"): the
namespaces under a prefix are one range of it, where a search under a namespace read
every fact (at 100,000 items, 100 namespaces: 189 ms of which most was the scan).

Revision ID: 0044
Revises: 0043
Create Date: 2026-11-27
"""

from ethos.db.migrations import execute_frozen

revision = "0044"
down_revision = "0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0044_item_namespaces.sql")
