"""The consumer protocol (KIP-848), pure: assignments, assignors, reconciliation, decisions.

No I/O and no clock here: the store and the service layer feed these functions what they read
and write what they return.
"""
