"""The store's side of Kinesis-backed topics: the stream reader (the only code that calls
Kinesis) and the shard registry's items."""
