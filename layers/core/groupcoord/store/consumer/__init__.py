"""Consumer groups (KIP-848) in the table: the repository (repository.py), target installs
(installs.py), conversions from and to classic groups (conversions.py); their items' codec is
store/codecs/consumer.py."""
