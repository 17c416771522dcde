"""What the CLI reads from files and stdin: `ethos import`'s JSON lines, and the content
of `add --content -` or `--content-file` (over 128 KiB, too long for an argument)."""

from __future__ import annotations

import argparse
import io
import shlex
import sys
import tempfile
from collections.abc import Iterable, Iterator
from typing import IO

from ethos.adapters.cli.output import emit
from ethos.adapters.cli.progress import watched
from ethos.domain.errors import InputError
from ethos.domain.inputs import MAX_CONTENT_BYTES, MAX_LINE_BYTES
from ethos.services.engine import Engine
from ethos.services.progress import Watch
from ethos.settings import Settings

STDIN = "-"


async def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    lines = _Lines(args.file)
    with lines, watched(args, "imported", "memories") as run:
        run.finish = lambda watch: _rest(args.file, watch)
        async with Engine(settings) as engine:
            imported = await engine.import_lines(
                lines, allow_future=args.allow_future, batch_size=args.batch_size,
                watch=run.watch,
            )  # fmt: skip
    text = [f"{table}: {n} written" for table, n in imported.by_table.items() if n]
    emit(args, imported.as_dict(), "\n".join([*text, run.closing()]))
    return run.finished()


def _rest(path: str, watch: Watch) -> str:
    """How to import what an interrupted import left: the lines after the last written."""
    after = watch.through_line + 1
    if path == STDIN:
        return f"to finish, import the same input from its line {after} on"
    return f"to finish: tail -n +{after} {shlex.quote(path)} | ethos import -"


class _Lines:
    """The lines of a file, or of stdin (kept in a temporary file as they are read, for
    the import's second reading), each cut at MAX_LINE_BYTES characters (import_line
    refuses a longer one). Bytes that are not UTF-8 reach the checks as lone surrogates,
    which name the line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.kept: IO[str] | None = None
        self.spooled = False  # stdin read into `kept`

    def __enter__(self) -> _Lines:
        if self.path == STDIN:
            self.kept = tempfile.TemporaryFile("w+", encoding="utf-8", errors="surrogateescape")
        else:
            open(self.path, "rb").close()  # a file that cannot be read: one line, at once
        return self

    def __exit__(self, *exc: object) -> None:
        if self.kept is not None:
            self.kept.close()

    def __call__(self) -> Iterable[str]:
        if self.kept is None:
            return self._file()
        if not self.spooled:
            self.spooled = True
            stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
            return self._keep(_cut(stdin), self.kept)
        self.kept.seek(0)
        return _cut(self.kept)

    def _file(self) -> Iterator[str]:
        with open(self.path, encoding="utf-8", errors="surrogateescape") as stream:
            yield from _cut(stream)

    @staticmethod
    def _keep(lines: Iterable[str], kept: IO[str]) -> Iterator[str]:
        for line in lines:
            kept.write(line)
            yield line


def _cut(stream: IO[str]) -> Iterator[str]:
    while line := stream.readline(MAX_LINE_BYTES + 1):
        yield line


def read_content(args: argparse.Namespace) -> str:
    """`add`'s content: the argument, or read from stdin (`--content -`) or a file
    (`--content-file`), as UTF-8, at most MAX_CONTENT_BYTES (the add checks the rest)."""
    if args.content_file is None and args.content != STDIN:
        return str(args.content)
    if args.content_file is None or args.content_file == STDIN:
        data = sys.stdin.buffer.read(MAX_CONTENT_BYTES + 1)
    else:
        with open(args.content_file, "rb") as stream:
            data = stream.read(MAX_CONTENT_BYTES + 1)
    if len(data) > MAX_CONTENT_BYTES:
        raise InputError(f"content is over {MAX_CONTENT_BYTES:,} bytes: at most that is stored")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"content is not UTF-8 text (byte {exc.start:,})") from None
