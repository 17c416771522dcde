"""LoCoMo conversations (Maharana et al., ACL 2024) as the benchmarks read them: each
turn "<speaker>: <text>" (and " [shares <blip_caption>]" when the speaker shared an
image: some answers are only in the caption) at its session's time, turns one second
apart in order; questions of categories 1-4 with their evidence turns (5 has no answer
in the conversation). Evidence ids written "D:11:26" or "D30:05" are normalised; ids
that name no turn are dropped, and a question left with no evidence is skipped (both
counted). Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Conversation:
    name: str
    turns: dict[str, tuple[str, datetime]]  # dia_id: (content, moment)
    questions: list[tuple[str, int, set[str]]]  # (question, category, evidence)
    sessions: list[tuple[datetime, list[str]]] = field(default_factory=list)  # in time order
    skipped: int = 0  # questions with no evidence left
    dropped: int = 0  # evidence ids that name no turn

    @property
    def evidence(self) -> set[str]:
        """Every turn some question asks about."""
        return set().union(*(evidence for _, _, evidence in self.questions))


def files(folder: str | Path) -> list[Path]:
    """The conversations' files in `folder`, in name order. None is an error, not a
    table of "0 of 0": a mistyped --data would otherwise pass for a result."""
    found = sorted(Path(folder).glob("*.json"))
    if not found:
        sys.exit(f"no LoCoMo conversation (*.json) in {Path(folder).resolve()}: pass --data FOLDER")
    return found


def load_all(folder: str | Path) -> list[Conversation]:
    return [load(path) for path in files(folder)]


def load(path: Path) -> Conversation:
    data = json.loads(path.read_text())
    talk = data.get("conversation", data)
    conversation = Conversation(path.stem, {}, [])
    for key, session in talk.items():
        if not (key.startswith("session_") and isinstance(session, list)):
            continue
        start = datetime.strptime(talk[f"{key}_date_time"], "%I:%M %p on %d %B, %Y")
        start = start.replace(tzinfo=UTC)
        for i, turn in enumerate(session):
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares {turn['blip_caption']}]"
            conversation.turns[turn["dia_id"]] = (text, start + timedelta(seconds=i))
        conversation.sessions.append((start, [turn["dia_id"] for turn in session]))
    conversation.sessions.sort()
    for qa in data["qa"]:
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = set()
        for raw in qa.get("evidence", []):
            for part in re.findall(r"D:?\d+:\d+", raw):
                session, turn = re.findall(r"\d+", part)
                dia_id = f"D{int(session)}:{int(turn)}"
                if dia_id in conversation.turns:
                    evidence.add(dia_id)
                else:
                    conversation.dropped += 1
        if evidence:
            conversation.questions.append((qa["question"], qa["category"], evidence))
        else:
            conversation.skipped += 1
    return conversation
