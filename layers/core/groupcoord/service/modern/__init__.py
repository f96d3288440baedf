"""What the member-based families' services share (the consumer protocol, streams): one
heartbeat skeleton over each family's hooks, one expiry pass."""
