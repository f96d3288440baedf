"""Group items as far as the directory needs them: listing for list-groups.

The group protocols (classic, consumer) own the rest of the group item; the directory only
reads the attributes the `listing` index projects.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import schema
from .dynamo import Dynamo


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    group_type: str
    group_state: str
    protocol_type: str


def listing_attributes(group_id: str) -> dict[str, str]:
    """The attributes that put a group item in the listing index."""
    return {
        schema.LISTING_PK: schema.group_listing_pk(group_id),
        schema.LISTING_SK: group_id,
        "groupId": group_id,
    }


class GroupDirectory:
    def __init__(self, dynamo: Dynamo) -> None:
        self.dynamo = dynamo

    def list(self) -> list[GroupListing]:
        found: list[GroupListing] = []
        for shard in range(schema.GROUP_LISTING_SHARDS):
            items = self.dynamo.query(
                "#pk = :pk",
                {":pk": f"GROUPS#{shard}"},
                names={"#pk": schema.LISTING_PK},
                index=schema.LISTING_INDEX,
            )
            for item in items:
                found.append(
                    GroupListing(
                        group_id=item["groupId"],
                        group_type=item.get("groupType", ""),
                        group_state=item.get("groupState", ""),
                        protocol_type=item.get("protocolType", ""),
                    )
                )
        return sorted(found, key=lambda g: g.group_id)
