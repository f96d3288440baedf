"""Consumer groups (KIP-848) in the table: items and their codec (codec.py), the repository
(repository.py), target installs (installs.py), conversions from and to classic groups
(conversions.py)."""
