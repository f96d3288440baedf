"""The consumer protocol's APIs (KIP-848): consumer-group-heartbeat, consumer-group-describe,
with the target installs and the lazy / swept expiry they rely on."""
