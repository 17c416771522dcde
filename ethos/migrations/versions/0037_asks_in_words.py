"""A question mark inside a web address asks nothing.

0036 counts a memory's words `[importance] auto_answer` times when the agent's previous
memory asks something, and took any '?' for a question: an agent that keeps links
("saved https://youtube.com/watch?v=dQw4w9WgXcQ for later") made whatever it wrote next
an answer. A '?' asks where it ends a sentence: followed by the end of the text, a space,
or punctuation (`What?!`, `(really?)`, `"yes?"`), not by the name or value of a query
string (`?v=`, `?q=`, `?utm_source`, `?&`). The full-width '？' still always asks. The
regular expression runs only on a text that holds a '?' at all.

Revision ID: 0037
Revises: 0036
Create Date: 2026-11-26
"""

from ethos.migrations import earlier_function, execute_script

revision = "0037"
down_revision = "0036"
branch_labels = None
depends_on = None

UPGRADE = r"""
CREATE OR REPLACE FUNCTION ethos_asks(content text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT (strpos(content, '?') > 0 AND content ~ '\?([^[:alnum:]_=&%/+-]|$)')
        OR strpos(content, '？') > 0
$$;
"""


def upgrade() -> None:
    execute_script(UPGRADE)


def downgrade() -> None:
    execute_script(earlier_function("0036_answers", "ethos_asks", "UPGRADE"))
