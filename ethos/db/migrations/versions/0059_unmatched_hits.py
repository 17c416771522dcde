"""A hit found only through others is `unmatched`: counted, never reinforced (issue 63).

Recall in context finds a turn through the turns beside it, and link-aware search finds
memories linked to its hits. Such a hit was recorded as surfaced, which reinforces (ltp.on_search
= "reinforce"): the chatter around a question was kept alive by it. Its own words (or
vector) do not match the query, so it is now recorded as the event kind `unmatched`:
surfaced_count + 1, nothing else (decision record 0020). The durable queue takes the
new kind.

Revision ID: 0059
Revises: 0058
Create Date: 2026-12-07
"""

from ethos.db.migrations import execute_frozen

revision = "0059"
down_revision = "0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    execute_frozen("0059_unmatched_hits.sql")
