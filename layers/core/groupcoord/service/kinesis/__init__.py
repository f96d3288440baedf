"""Kinesis-backed topics: binding a topic to a stream at create-topics, and syncing its shard
registry (docs/kinesis.md)."""
