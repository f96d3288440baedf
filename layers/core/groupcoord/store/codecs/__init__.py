"""Each family's items as the table holds them, and the models they hold (core/): one codec
per family (classic.py, consumer.py, streams.py), no reads, no writes. Below everything else of
the store that knows a family: the typed read of a group (stored_group.py) decodes with them,
and each family's repository (classic/, consumer/, streams/) writes with them, so neither
imports the other's package."""
