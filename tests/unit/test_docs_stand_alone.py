"""The repository's docs and code stand alone: they never point at the team's notes outside
the repository (contract files by name, a shared folder), and every relative link of a
Markdown page leads to a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = (
    "README.md",
    "docs",
    "examples",
    "layers",
    "bench",
    "functions",
    "clients/typescript/src",
)
SUFFIXES = {".md", ".py", ".ts", ".toml", ".yaml"}
OUTSIDE = re.compile(
    r"\b(?:STREAMS|KINESIS|PROTOCOL|API|DESIGN|STYLE)\.md\b|shared (?:folder|notes)|\bshared/"
)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _files() -> list[Path]:
    found: list[Path] = []
    for source in SOURCES:
        path = ROOT / source
        candidates = [path] if path.is_file() else path.rglob("*")
        found += [
            p
            for p in candidates
            if p.suffix in SUFFIXES and "node_modules" not in p.parts and p.is_file()
        ]
    return sorted(found)


def test_nothing_points_at_notes_outside_the_repository() -> None:
    pointing = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert not pointing, "\n".join(pointing)


def test_every_relative_link_of_the_pages_leads_to_a_file() -> None:
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in _files()
        if page.suffix == ".md"
        for target in LINK.findall(page.read_text())
        if "://" not in target
        and not target.startswith("mailto:")
        and not (page.parent / target).exists()
    ]
    assert not broken, "\n".join(broken)


def test_the_readme_says_to_activate_the_venv_before_its_bare_commands() -> None:
    """The first commands install into .venv and call .venv/bin/...; the later ones call
    `groupcoord` and `python examples/...` bare, which work only in the activated venv."""
    text = (ROOT / "README.md").read_text()
    bare = re.search(r"^(?:groupcoord |python examples/)", text, re.M)
    assert bare is not None
    assert ". .venv/bin/activate" in text[: bare.start()]
