"""The classic group protocol: join-group, sync-group, heartbeat, leave-group, describe."""
