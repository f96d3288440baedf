"""The member-based families' shared decisions (the consumer protocol, streams), pure: one
refusal, the group a heartbeat acts on, a static member's identity, leave and takeover, and
the expiry of overdue members. Each family passes its own rule where they differ."""
