"""The layer's build (layers/core/Makefile, what `sam build` runs) says first that it needs a
python3.12, before copying or downloading anything."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

LAYER = Path(__file__).resolve().parents[2] / "layers" / "core"


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_a_missing_python312_is_said_before_anything_is_built(tmp_path: Path) -> None:
    built = subprocess.run(
        [
            "make", "--no-print-directory", "-C", str(LAYER), "build-CoreLayer",
            f"ARTIFACTS_DIR={tmp_path}", "BYTECODE_PYTHON=no-such-python3.12",
            "PYTHON=false",  # a pip step reached would fail otherwise
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert built.returncode != 0
    said = built.stderr.strip().splitlines()
    assert said and "is not CPython 3.12" in said[0], built.stderr
    assert "--use-container" in said[0]
    assert not (tmp_path / "python").exists()  # nothing copied, nothing downloaded
