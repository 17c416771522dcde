"""The database as it is today, defined once: the SQL files of this folder, read in
ORDER. A fresh database is created from them; migrations only carry a database made
earlier up to them, from the baseline on; until the first release the baseline is these
files themselves, and a copy of them from it on (decision 0025;
tests/integration/test_schema.py holds the two equal).

Reading order: the tables of memories and policies (and the one function their defaults
call), those of ethos's own work (the retrieval queue, runs and audit, daemons, agent
roles, seeds), the decay math, text statistics, importance, the write path (the trigger
functions and the triggers that call them), access for agent roles, the monitoring views.
"""

from __future__ import annotations

import hashlib
from importlib import resources

ORDER = (
    "tables.sql",
    "operations.sql",
    "decay.sql",
    "text.sql",
    "importance.sql",
    "write_path.sql",
    "access.sql",
    "views.sql",
)


def definition() -> str:
    """The files in ORDER as one script, its vectors' dimension left as {dimension}."""
    folder = resources.files(__name__)
    return "\n".join(folder.joinpath(name).read_text() for name in ORDER)


def revision_of(sql: str) -> str:
    """A baseline's revision: the start of its SQL's SHA-256 (decision 0025)."""
    return hashlib.sha256(sql.encode()).hexdigest()[:12]


def script(dimension: int) -> str:
    """The whole schema as one script, its vectors of the embedding's dimension, and the
    seeded word prior."""
    return definition().replace("{dimension}", str(int(dimension))) + "\n" + word_prior_seed()


def word_prior_seed() -> str:
    """The statement that fills word_prior with word_prior.tsv (scripts/word_prior.py):
    each word's row written, those no longer listed deleted."""
    rows = [
        line.split("\t")
        for line in resources.files(__name__).joinpath("word_prior.tsv").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    values = ",\n".join(f"({quoted(word)}, {float(zipf)!r})" for word, zipf in rows)
    return (
        f"WITH listed (word, zipf) AS (VALUES\n{values}\n),\n"
        "gone AS (DELETE FROM word_prior AS p WHERE NOT EXISTS"
        " (SELECT FROM listed AS l WHERE l.word = p.word))\n"
        "INSERT INTO word_prior (word, zipf) SELECT word, zipf FROM listed\n"
        "ON CONFLICT (word) DO UPDATE SET zipf = excluded.zipf;\n"
    )


def quoted(text: str) -> str:
    """An SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
