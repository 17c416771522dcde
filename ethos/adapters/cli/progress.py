"""Long commands as a person watches them: a progress line on a terminal (stderr, only
when it is one), a closing line however they end (done, of what total, how to finish),
and Ctrl-C or SIGTERM as a clean stop at the next batch boundary, with the exit code of
the signal (a second signal exits at once)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ethos.services.progress import Watch
from ethos.signals import on_stop

RERUN = "run the same command again to finish"
WIDTH = 30


def on_terminal(args: argparse.Namespace) -> bool:
    """Whether to draw progress: stderr is a terminal and the output is for a person."""
    return sys.stderr.isatty() and not getattr(args, "json", False)


def draw(
    label: str, done: int, total: int | None, *, last: bool = False, full: bool = False
) -> None:
    """One progress line on stderr, drawn over the previous one; `last` ends it, `full`
    fills its bar (a sweep's table done, whatever its estimate was)."""
    if total:
        filled = WIDTH if full else min(WIDTH, WIDTH * done // total)
        shown = f"[{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{total}"
    else:
        shown = str(done)
    print(f"\r{label:<16} {shown}", end="\n" if last else "", file=sys.stderr, flush=True)


@dataclass
class Watched:
    """A command's Watch, the words of its closing line, and the signals received."""

    verb: str  # "recovered"
    noun: str  # "episodic_traces rows"
    watch: Watch = field(default_factory=Watch)
    signals: list[int] = field(default_factory=list)
    # How to finish what is left (an import does not rerun: it reads the lines left).
    finish: Callable[[Watch], str] = lambda _: RERUN

    def closing(self) -> str:
        """`recovered 43000 of 49167 episodic_traces rows`: how far it got."""
        total = "" if self.watch.total is None else f" of {self.watch.total}"
        return f"{self.verb} {self.watch.done}{total} {self.noun}"

    def finished(self) -> int:
        """The exit code; an interrupted run says on stderr how far it got and how to
        finish (its report, on stdout, counts what it committed)."""
        if not self.watch.interrupted:
            return 0
        print(f"ethos: interrupted: {self._far()}; {self.finish(self.watch)}", file=sys.stderr)
        return 128 + self.signals[0] if self.signals else 130

    def _far(self) -> str:
        audit = f" (audit: {self.watch.audit})" if self.watch.audit else ""
        return f"{self.closing()}{audit}"


class Line:
    """A Watch's progress line on the terminal, ended (once) when the work is done or
    stops, before anything else is printed (a log line, the closing line)."""

    def __init__(self, verb: str) -> None:
        self.verb = verb
        self.ended = False

    def show(self, watch: Watch) -> None:
        if watch.total == 0:  # nothing to do: no line
            self.ended = True
        if not self.ended:
            self.ended = watch.interrupted or watch.done == watch.total
            draw(self.verb, watch.done, watch.total, last=self.ended)

    def end(self) -> None:
        if not self.ended:
            self.ended = True
            print(file=sys.stderr)


@contextmanager
def watched(args: argparse.Namespace, verb: str, noun: str) -> Iterator[Watched]:
    """Run a long command under Ctrl-C and SIGTERM as clean stops, drawing its progress
    on a terminal; a run that fails after committing something says how far it got."""
    run = Watched(verb, noun)
    line = Line(verb)
    if on_terminal(args):
        run.watch.shown = line.show
    else:
        line.ended = True

    def stop() -> None:
        line.end()
        run.watch.stop.set()

    with on_stop(stop) as received:
        run.signals = received
        try:
            yield run
        except BaseException:
            line.end()
            if run.watch.done:
                print(f"ethos: stopped: {run._far()}; {run.finish(run.watch)}", file=sys.stderr)
            raise
    line.end()
