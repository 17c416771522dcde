"""The CLI's parser as a reader meets it: every flag and argument described, each
table's add with its own flags alone, ids with or without their table (issue 66)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from ethos.adapters.cli import build_parser

FACT_ID = "0193a1b2-0000-7000-8000-000000000001"
EPISODE_ID = "0193a1b2-0000-7000-8000-000000000002"


def parsers(
    parser: argparse.ArgumentParser, path: str = "ethos"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every parser of the tree, by its command line (aliases once)."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from parsers(sub, f"{path} {name}")


def test_every_flag_and_argument_has_a_description() -> None:
    """Issue 66: most flags had no description in --help."""
    undescribed = [
        f"{path}: {'/'.join(action.option_strings) or action.dest}"
        for path, parser in parsers(build_parser())
        for action in parser._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]
    assert undescribed == []
    # and every command and subcommand says what it does (in its parent's list)
    for _, parser in parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert all(choice.help for choice in action._choices_actions)


def flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_each_tables_add_takes_its_own_flags_alone() -> None:
    """Issue 66: `add episode --help` listed fact- and vector-only flags."""
    add = dict(parsers(build_parser()))
    only = {
        "--emotional-tone": {"episode"},
        "--confidence": {"fact"},
        "--expires-at": {"fact", "vector"},
    }
    for table in ("episode", "fact", "vector"):
        taken = flags(add[f"ethos add {table}"])
        assert {
            "--agent",
            "--content",
            "--embedding",
            "--policy",
            "--importance",
            "--json",
        } <= taken
        assert {flag for flag, tables in only.items() if table in tables} == taken & set(only)


def test_the_long_names_of_the_tables_add_too() -> None:
    args = build_parser().parse_args(["add", "semantic_facts", "--agent", "a", "--content", "x"])
    assert (args.table, args.confidence) == ("semantic_facts", None)


@pytest.mark.parametrize(
    ("words", "table", "ids"),
    [
        (["forget", FACT_ID], None, [FACT_ID]),
        (["forget", FACT_ID, EPISODE_ID], None, [FACT_ID, EPISODE_ID]),
        (["forget", "fact", FACT_ID], "semantic_facts", [FACT_ID]),
        # the table among the flags, as when it was required
        (["forget", "fact", "--agent", "a", FACT_ID], "semantic_facts", [FACT_ID]),
        (["feedback", FACT_ID, "--useful", "--agent", "a"], None, [FACT_ID]),
        (["record-retrieval", "episodic_traces", EPISODE_ID], "episodic_traces", [EPISODE_ID]),
    ],
)
def test_ids_with_or_without_their_table(
    words: list[str], table: str | None, ids: list[str]
) -> None:
    args = build_parser().parse_args(words)
    assert (args.table, args.ids) == (table, ids)


@pytest.mark.parametrize("command", ["explain", "history", "links"])
def test_one_id_with_or_without_its_table(command: str) -> None:
    parse = build_parser().parse_args
    assert (parse([command, FACT_ID]).table, parse([command, FACT_ID]).id) == (None, FACT_ID)
    given = parse([command, "fact", FACT_ID, "--agent", "a"])
    assert (given.table, given.id, given.agent) == ("semantic_facts", FACT_ID, "a")


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["explain", "facts", FACT_ID], "unknown table 'facts'"),
        (["explain", FACT_ID, EPISODE_ID], "one id (got 2)"),
        (["forget", "fact"], "argument ID: give the id after the table"),
    ],
)
def test_a_wrong_table_or_count_is_one_line(
    words: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(words)
    assert exited.value.code == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert message in line
