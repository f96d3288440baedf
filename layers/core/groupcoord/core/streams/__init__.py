"""Streams groups (KIP-1071) as pure rules: tasks, topology, the sticky task assignor and the
reconciliation of a member towards its target. No I/O, no clock."""
