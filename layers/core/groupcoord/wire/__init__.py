"""The wire formats the client and the server share: pure, standard library only, importing
nothing else of groupcoord, so the client reads and writes them without the server's core
(pyproject.toml's import-linter contracts hold both sides to it)."""
