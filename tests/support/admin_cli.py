"""The admin CLI run in this process against a coordinator, as a fixture: `cli(*args)` gives
what it printed and its exit status (tests/e2e/test_admin_cli.py's Ran)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from groupcoord.cli import main
from tests.e2e.test_admin_cli import Ran


def cli_fixture(url_fixture: str) -> Callable[..., Iterator[Any]]:
    """A `cli` fixture for the coordinator the fixture named `url_fixture` yields."""

    @pytest.fixture
    def cli(request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
        url = request.getfixturevalue(url_fixture)

        def run(*args: str) -> Ran:
            capsys.readouterr()
            try:
                code = main([*args, "--url", url])
            except SystemExit as exit_:  # argparse usage errors
                code = int(exit_.code or 0)
            out, err = capsys.readouterr()
            return Ran(code, out, err)

        yield run

    return cli
