"""groupcoord: a serverless Kafka-style consumer-group coordinator."""

__version__ = "0.1.0"
