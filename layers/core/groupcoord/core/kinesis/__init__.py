"""Kinesis-backed topics (../../../docs/kinesis.md): the binding of a topic to a stream and
the append-only shard registry, as pure rules."""
