"""Adds to every pin of requirements.txt the sha256 of the wheel pip installs for it on each
architecture the layer can be built for, so that the build (`pip install --require-hashes`)
installs exactly the files that were locked. Run by `make -C layers/core lock` after a pin
changes; the pins themselves, comments and order are kept.

    python3 lock_requirements.py --python-version 3.12 \
        --platforms "manylinux2014_x86_64 manylinux_2_28_x86_64" \
        --platforms "manylinux2014_aarch64 manylinux_2_28_aarch64" requirements.txt

Each --platforms is one architecture's platform tags, as the Makefile's PLATFORMS_<arch>:
`pip download` then picks the same wheel `pip install` picks when building for it. Only wheels
are hashed (the build takes no sdist); a pure-Python wheel is the same file on every platform.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PIN = re.compile(r"([A-Za-z0-9._-]+)(\[[^\]]*\])?==(\S+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def logical_lines(text: str) -> list[str]:
    """The file's lines with backslash continuations joined (pip's own reading)."""
    lines, pending = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        lines.append(pending + raw)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def pins(lines: list[str]) -> list[tuple[str, str, str]]:
    """(requirement as written, canonical name, version) of every pin, hashes left out."""
    found = []
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        match = PIN.fullmatch(words[0])
        if match is None or any(not w.startswith("--hash=") for w in words[1:]):
            sys.exit(f"requirements.txt: not an exact pin with hashes: {line.strip()!r}")
        found.append((words[0], canonical(match[1]), match[3]))
    return found


def wheel_hashes(requirements: list[str], python_version: str, platforms: str, into: Path):
    """canonical name -> (version, sha256) of the wheels pip downloads for these platforms."""
    into.mkdir()
    listing = into / "requirements.txt"
    listing.write_text("\n".join(requirements) + "\n")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += ["--no-deps", "--only-binary=:all:", "--implementation", "cp"]
    command += ["--python-version", python_version, "--dest", str(into), "-r", str(listing)]
    for platform in platforms.split():
        command += ["--platform", platform]
    subprocess.run(command, check=True)
    found = {}
    for wheel in sorted(into.glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        found[canonical(name)] = (version, hashlib.sha256(wheel.read_bytes()).hexdigest())
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-version", required=True)
    parser.add_argument("--platforms", action="append", required=True)
    parser.add_argument("requirements", type=Path)
    args = parser.parse_args(argv)
    lines = logical_lines(args.requirements.read_text())
    pinned = pins(lines)
    hashes: dict[str, set[str]] = {name: set() for _, name, _ in pinned}
    with tempfile.TemporaryDirectory() as tmp:
        for i, platforms in enumerate(args.platforms):
            wheels = wheel_hashes(
                [r for r, _, _ in pinned], args.python_version, platforms, Path(tmp) / str(i)
            )
            for _, name, version in pinned:
                if name not in wheels or wheels[name][0] != version:
                    sys.exit(f"no {name}=={version} wheel for {platforms}")
                hashes[name].add(wheels[name][1])
    out = []
    for line in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            out.append(line)
            continue
        name = canonical(PIN.fullmatch(words[0])[1])
        out.append(
            " \\\n".join([words[0], *(f"    --hash=sha256:{h}" for h in sorted(hashes[name]))])
        )
    args.requirements.write_text("\n".join(out) + "\n")
    total = sum(len(h) for h in hashes.values())
    print(f"{args.requirements}: {len(pinned)} pins, {total} wheel hashes")


if __name__ == "__main__":
    main()
