"""Group items as far as the directory needs them: listing for list-groups, a page at a time.

The group protocols (classic, consumer) own the rest of the group item; the directory only
reads the attributes the `listing` index projects.

A page merges the index's shards in group id order. Each shard is read from where the previous
page stopped in it, at most `limit` entries (one Query with Limit). The page answers, in id
order, the first `limit` entries that no unread entry can precede: those up to the smallest
last-read id among the shards with more to read. The shard of that id read `limit` entries up
to it, so a page is full unless the listing ends. The cursor records per shard the last id
answered: every group is answered once, in id order across the pages, and a page reads at
most GROUP_LISTING_SHARDS * limit index entries.
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import schema
from .dynamo import ConditionFailed, Dynamo

# The cursor: "L1" then, per shard, "s" (not read yet), "d" (answered to its end) or "a" and
# the unpadded base64url of the last group id answered (its UTF-8), joined by ".". Compact and
# bounded whatever the ids hold: at most 1,024 bytes an id (DynamoDB's sort key limit) is
# 1,366 characters, so a cursor stays under 5,500.
_CURSOR_VERSION = "L1"
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_SORT_KEY_MAX_BYTES = 1024


# A sealed cursor: "S1." and a random token naming the item that holds the cursor, for a caller
# who may not see every group id a plain cursor would spell out.
_SEALED_VERSION = "S1"
_SEALED_TOKEN_BYTES = 16
_SEALED_TOKEN = re.compile(r"[A-Za-z0-9_-]{22}")
SEALED_CURSOR_TTL_MS = 3_600_000


class InvalidCursor(ValueError):
    """A cursor this listing did not hand out (garbled, forged, or of another layout)."""


def is_sealed(text: str) -> bool:
    return text.startswith(_SEALED_VERSION + ".")


@dataclass(frozen=True)
class ListingCursor:
    """Where a listing stands: per shard, the last group id answered (None: none yet), and
    the shards answered to their end."""

    after: tuple[str | None, ...]
    done: frozenset[int] = frozenset()

    @classmethod
    def start(cls) -> ListingCursor:
        return cls((None,) * schema.GROUP_LISTING_SHARDS)

    def encode(self) -> str:
        parts = [_CURSOR_VERSION]
        for shard, after in enumerate(self.after):
            if shard in self.done:
                parts.append("d")
            elif after is None:
                parts.append("s")
            else:
                parts.append("a" + _encode_id(after))
        return ".".join(parts)

    @classmethod
    def decode(cls, text: str) -> ListingCursor:
        """The cursor `encode` wrote, or InvalidCursor: whatever it holds, a decoded cursor
        only ever names group ids of the right shard that the index can hold, so it cannot
        make a Query fail or read anything but the listing index."""
        parts = text.split(".")
        if parts[0] != _CURSOR_VERSION or len(parts) != 1 + schema.GROUP_LISTING_SHARDS:
            raise InvalidCursor("is not a cursor list-groups answered")
        after: list[str | None] = []
        done: set[int] = set()
        for shard, part in enumerate(parts[1:]):
            if part in ("s", "d"):
                after.append(None)
                if part == "d":
                    done.add(shard)
            elif part.startswith("a"):
                after.append(_decode_id(part[1:], shard))
            else:
                raise InvalidCursor("is not a cursor list-groups answered")
        return cls(tuple(after), frozenset(done))


def _encode_id(group_id: str) -> str:
    return base64.urlsafe_b64encode(group_id.encode("utf-8")).rstrip(b"=").decode("ascii")


def _decode_id(code: str, shard: int) -> str:
    refused = InvalidCursor("is not a cursor list-groups answered")
    if not _BASE64URL.fullmatch(code) or len(code) % 4 == 1:
        raise refused
    try:
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        group_id = raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise refused from None
    # Canonical form only (no stray padding bits), an id the index can hold, of this shard.
    if _encode_id(group_id) != code or len(raw) > _SORT_KEY_MAX_BYTES:
        raise refused
    if schema.group_listing_pk(group_id) != schema.group_listing_shard_pk(shard):
        raise refused
    return group_id


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


@dataclass(frozen=True)
class GroupHeader:
    """What code outside the store may know of a group item of either type, before (or
    without) reading it as its type's model: the group item's layout stays in store/."""

    group_id: str
    group_type: str  # "classic", "consumer" or "streams"
    protocol_type: str | None
    member_count: int
    member_shards: int
    deadline: int | None
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    retention_armed: bool
    created_at_ms: int = 0

    @property
    def is_consumer_group(self) -> bool:
        return self.group_type == "consumer"

    @property
    def is_classic_group(self) -> bool:
        return self.group_type == "classic"


def header(item: dict[str, Any]) -> GroupHeader:
    return GroupHeader(
        group_id=item["groupId"],
        group_type=item.get("groupType", ""),
        protocol_type=item.get("protocolType") or None,
        member_count=int(item.get("memberCount", 0)),
        member_shards=int(item.get("memberShards", 8)),
        deadline=int(item[schema.DEADLINE]) if schema.DEADLINE in item else None,
        subscribed_topics=tuple(item.get("subscribedTopics") or ()),
        subscribed_regex=item.get("subscribedRegex") or None,
        retention_armed=bool(item.get("retentionArmed")),
        created_at_ms=int(item.get("createdAt", 0)),
    )


class GroupDirectory:
    def __init__(self, dynamo: Dynamo) -> None:
        self.dynamo = dynamo

    def delete_if_unchanged(self, group_id: str, version: int) -> bool:
        """Delete an empty group's item (delete-groups, offset retention) if it is still at the
        version read and empty; False if it moved meanwhile (a member joined, a commit
        re-created it...). The group's other items are its type's to clean up."""
        try:
            self.dynamo.delete(
                schema.group_key(group_id),
                condition="#version = :version AND memberCount = :zero",
                names={"#version": "version"},
                values={":version": version, ":zero": 0},
            )
        except ConditionFailed:
            return False
        return True

    def page(
        self, cursor: ListingCursor, limit: int
    ) -> tuple[list[GroupListing], ListingCursor | None]:
        """Up to `limit` groups in id order from `cursor` on, and the cursor of the next page
        (None when the listing is complete)."""
        answered, following = self._page(cursor, limit)
        return [_listing(item) for _, _, item in answered], following

    def entries(
        self, cursor: ListingCursor, batch: int
    ) -> Iterator[tuple[GroupListing, ListingCursor]]:
        """Every group from `cursor` on, in id order, each with the cursor that resumes right
        after it; read `batch` entries a shard at a time (a page of `page`)."""
        current: ListingCursor | None = cursor
        while current is not None:
            answered, following = self._page(current, batch)
            after = list(current.after)
            for group_id, shard, item in answered:
                after[shard] = group_id
                yield _listing(item), ListingCursor(tuple(after), current.done)
            current = following

    def _page(
        self, cursor: ListingCursor, limit: int
    ) -> tuple[list[tuple[str, int, dict[str, Any]]], ListingCursor | None]:
        """`page`'s entries as read: (group id, shard, index item)."""
        read: list[tuple[str, int, dict[str, Any]]] = []
        more: dict[int, str] = {}  # shard -> last id read, for the shards with more to read
        for shard, after in enumerate(cursor.after):
            if shard in cursor.done:
                continue
            items = self._read_shard(shard, after, limit)
            read += [(item[schema.LISTING_SK], shard, item) for item in items]
            if len(items) == limit:
                more[shard] = items[-1][schema.LISTING_SK]
        read.sort(key=lambda entry: entry[0])
        bound = min(more.values(), default=None)
        answered = [entry for entry in read if bound is None or entry[0] <= bound][:limit]
        after_ids = list(cursor.after)
        for group_id, shard, _ in answered:
            after_ids[shard] = group_id
        answered_of = Counter(shard for _, shard, _ in answered)
        read_of = Counter(shard for _, shard, _ in read)
        done = set(cursor.done) | {
            shard
            for shard in range(len(cursor.after))
            if shard not in more and answered_of[shard] == read_of[shard]
        }
        following = None
        if len(done) < len(cursor.after):
            following = ListingCursor(tuple(after_ids), frozenset(done))
        return answered, following

    def seal(self, cursor: ListingCursor, principal: str, now_ms: int) -> str:
        """`cursor` kept in the table, and the opaque text that stands for it: a cursor that
        may not spell out its group ids to `principal` (one write; the item expires)."""
        token = secrets.token_urlsafe(_SEALED_TOKEN_BYTES)
        expires_ms = now_ms + SEALED_CURSOR_TTL_MS
        self.dynamo.put(
            {
                **schema.listing_cursor_key(token),
                "kind": schema.KIND_LISTING_CURSOR,
                "cursor": cursor.encode(),
                "principal": principal,
                "expiresMs": expires_ms,
                schema.TTL_ATTRIBUTE: expires_ms // 1000 + 1,
            },
            condition="attribute_not_exists(pk)",
        )
        return f"{_SEALED_VERSION}.{token}"

    def unseal(self, text: str, principal: str, now_ms: int) -> ListingCursor:
        """The cursor `seal` kept for `principal`, or InvalidCursor: another caller's, expired,
        or never handed out."""
        token = text[len(_SEALED_VERSION) + 1 :]
        if not _SEALED_TOKEN.fullmatch(token):
            raise InvalidCursor("is not a cursor list-groups answered")
        item = self.dynamo.get(schema.listing_cursor_key(token), consistent=True)
        if item is None or item.get("principal") != principal:
            raise InvalidCursor("is not a cursor list-groups answered to this caller")
        if int(item.get("expiresMs", 0)) <= now_ms:
            raise InvalidCursor("has expired: list the groups from the start")
        return ListingCursor.decode(item["cursor"])

    def _read_shard(self, shard: int, after: str | None, limit: int) -> list[dict[str, Any]]:
        condition = "#pk = :pk"
        names = {"#pk": schema.LISTING_PK}
        values = {":pk": schema.group_listing_shard_pk(shard)}
        if after is not None:
            condition += " AND #sk > :after"
            names["#sk"] = schema.LISTING_SK
            values[":after"] = after
        return list(
            self.dynamo.query(
                condition, values, names=names, index=schema.LISTING_INDEX, limit=limit
            )
        )


def _listing(item: dict[str, Any]) -> GroupListing:
    return GroupListing(
        group_id=item["groupId"],
        group_type=item.get("groupType", ""),
        group_state=item.get("groupState", ""),
        protocol_type=item.get("protocolType", ""),
    )
