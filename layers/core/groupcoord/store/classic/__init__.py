"""Classic groups in the table: items and their codec (codec.py), transitions as writes
(transition.py), the repository that reads and commits them (repository.py)."""
