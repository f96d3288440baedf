"""The store facade: one object that hands out the table's repositories."""

from __future__ import annotations

from ..settings import Settings
from . import schema
from .acls import AclStore
from .classic.repository import ClassicGroupStore
from .consumer.installs import TargetInstalls
from .consumer.repository import ConsumerGroupStore
from .conversion import Conversions
from .coordinator import CoordinatorRecord
from .deadlines import DeadlineIndex
from .dynamo import Dynamo, make_client
from .group_cleanup import GroupCleanups
from .groups import GroupDirectory
from .kinesis.registry import ShardRegistry
from .kinesis.streams import Streams
from .offsets import OffsetStore
from .push import ConnectionPoster, PushConnections
from .retention import RetentionStore
from .streams.installs import StreamsInstalls
from .streams.repository import StreamsGroupStore
from .topics import TopicRegistry


class Store:
    def __init__(self, dynamo: Dynamo, settings: Settings) -> None:
        self.dynamo = dynamo
        self.settings = settings
        # The deployment's clock (groupcoord/clock.py): its adapter's, which its retries pause
        # on; its requests read and sleep on it too (ApiContext.clock).
        self.clock = dynamo.clock
        self.topics = TopicRegistry(dynamo, settings.deadline_shards)
        self.groups = GroupDirectory(dynamo)
        self.cleanups = GroupCleanups(dynamo, settings.deadline_shards)
        self.coordinator = CoordinatorRecord(dynamo)
        # One for every reader of a group item: a reader that takes over an abandoned
        # conversion holds it on this deployment's lease.
        self.conversions = Conversions(dynamo, settings.conversion_lease_ms)
        self.classic = ClassicGroupStore(dynamo, settings.deadline_shards, self.conversions)
        self.consumer = ConsumerGroupStore(dynamo, settings.deadline_shards, self.conversions)
        self.consumer_installs = TargetInstalls(dynamo, settings.deadline_shards)
        self.streams = StreamsGroupStore(dynamo, settings.deadline_shards, self.conversions)
        self.streams_installs = StreamsInstalls(dynamo, settings.deadline_shards)
        self.offsets = OffsetStore(dynamo, settings.deadline_shards)
        self.retention = RetentionStore(dynamo, settings.deadline_shards)
        self.deadlines = DeadlineIndex(dynamo, settings.deadline_shards)
        self.acls = AclStore(dynamo)
        # Kinesis-backed topics: their shard registries, and the stream reader (the only
        # caller of Kinesis; its boto3 client is made at first use).
        self.shards = ShardRegistry(dynamo, self.topics, settings.deadline_shards)
        self.kinesis = Streams()
        # The push channel (store/push.py): its connections, and the `@connections` poster
        # only when one is configured (none: nothing is posted, nothing read for it).
        self.push = PushConnections(dynamo)
        endpoint = settings.push_connections_endpoint
        self.push_poster = ConnectionPoster(endpoint) if endpoint else None

    @classmethod
    def connect(
        cls, settings: Settings, endpoint_url: str | None = None, region: str | None = None
    ) -> Store:
        client = make_client(endpoint_url=endpoint_url, region=region)
        return cls(Dynamo(client, settings.table_name, settings.store_max_attempts), settings)

    def ensure_table(self) -> bool:
        return self.dynamo.ensure_table(
            schema.table_definition(self.settings.table_name), schema.TTL_ATTRIBUTE
        )
