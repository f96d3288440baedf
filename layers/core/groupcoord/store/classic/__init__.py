"""Classic groups in the table: transitions as writes (transition.py), the repository that reads
and commits them (repository.py); their items' codec is store/codecs/classic.py."""
