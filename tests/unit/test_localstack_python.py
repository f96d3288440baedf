"""Which Python 3.13 `groupcoord localstack` builds LocalStack's environment with: python3.13 on
PATH only if it runs (a pyenv shim answers only where 3.13 is chosen), then pyenv's versions,
else one line naming what to install. Stand-in interpreters are scripts that print a version."""

from __future__ import annotations

from pathlib import Path

import pytest

from groupcoord.local.localstack import find_python
from groupcoord.local.npm_engines import Missing


def _interpreter(path: Path, version: str | None) -> Path:
    """An executable that answers like `python -c ...` printing `version` (None: fails, as a
    pyenv shim without that version chosen does)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = (
        f"echo {version}"
        if version
        else "echo 'pyenv: python3.13: command not found' >&2; exit 127"
    )
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH holding only the test's folder; no pyenv; no override."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    for name in ("PYENV_ROOT", "GROUPCOORD_LOCALSTACK_PYTHON"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_a_shim_that_does_not_run_is_passed_over_for_pyenvs_own_313(
    bare: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _interpreter(bare / "bin" / "python3.13", None)
    root = bare / "pyenv"
    _interpreter(root / "versions" / "3.13.0" / "bin" / "python3.13", "3.13")
    newest = _interpreter(root / "versions" / "3.13.2" / "bin" / "python3.13", "3.13")
    monkeypatch.setenv("PYENV_ROOT", str(root))
    assert find_python() == str(newest)


def test_python_313_on_path_comes_first(bare: Path) -> None:
    on_path = _interpreter(bare / "bin" / "python3.13", "3.13")
    assert find_python() == str(on_path)


def test_no_python_313_is_one_line_naming_what_to_install(bare: Path) -> None:
    _interpreter(bare / "bin" / "python3.13", "3.12")  # misnamed: not 3.13
    with pytest.raises(Missing) as missing:
        find_python()
    message = str(missing.value)
    assert "\n" not in message
    assert "Python 3.13" in message and "pyenv install 3.13" in message
