"""Domain errors name parameters as the Python API (and MCP, and HTTP) calls them; the
CLI shows its own flags in their place (issue 25)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ethos.adapters.cli.output import as_flags
from ethos.domain.errors import InputError
from ethos.domain.roles import Roles
from ethos.services.recovery import Selector


@pytest.mark.parametrize(
    ("make", "api", "cli"),
    [
        (
            lambda: Selector().check(),
            "say which rows to recover: `ids`, `agent`, `since` or `reason`",
            "say which rows to recover: --id, --agent, --since or --reason",
        ),
        (
            lambda: Roles("app", "app"),
            "`app`, `eraser` and `agents` need different roles",
            "--app, --eraser and --agent-role need different roles",
        ),
    ],
)
def test_errors_name_parameters_and_the_cli_its_flags(
    make: Callable[[], object], api: str, cli: str
) -> None:
    with pytest.raises(InputError) as caught:
        make()
    assert str(caught.value) == api
    assert as_flags(str(caught.value)) == cli


def test_only_quoted_names_become_flags() -> None:
    line = "`pruned_before` must not be after now: run `ethos migrate`, tables stay"
    assert (
        as_flags(line) == "--pruned-before must not be after now: run `ethos migrate`, tables stay"
    )
