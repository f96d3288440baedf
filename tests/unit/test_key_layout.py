"""The table's key layout is injective: no user string makes one group's key another's.

Every partition key a group's items can have is built by store/schema.py from the group id; if
two distinct groups never share a partition key, no read, listing query or delete of one can
reach an item of the other (no query walks a sort-key prefix).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from groupcoord.models.limits import GROUP_ID_MAX_CHARS, TOPIC_NAME_MAX_CHARS
from groupcoord.store import schema

SHARDS = 8

# Ids as hostile as the models let through: the key separator, the escape character, slashes,
# NUL, unicode, empty parts and the suffixes of other key kinds, up to the length limit.
_PIECES = st.sampled_from(["#", "%", "%23", "%25", "/", "\x00", "M1", "P3", "I", "S0", "J2", "C"])
hostile_ids = st.lists(st.one_of(_PIECES, st.text(max_size=8)), min_size=1, max_size=12).map(
    "".join
).filter(lambda s: 0 < len(s) <= GROUP_ID_MAX_CHARS) | st.text(
    min_size=1, max_size=GROUP_ID_MAX_CHARS
)


def partition_keys_of(group_id: str) -> set[str]:
    """Every partition key under which an item of the group can live."""
    keys = {
        schema.group_key(group_id)[schema.PK],
        schema.retention_key(group_id)[schema.PK],
        schema.instance_pk(group_id),
        *schema.member_pks(group_id, SHARDS),
        *schema.payload_pks(group_id, SHARDS),
        *schema.offset_pks(group_id),
    }
    for shard in range(SHARDS):
        keys.add(schema.join_count_pk(group_id, shard))
        keys.add(schema.static_instance_pk(group_id, shard))
        keys.add(schema.staged_pk(group_id, "0123abcd", shard))
    return keys


@given(hostile_ids)
def test_an_escaped_name_has_no_separator_and_decodes_back(name: str) -> None:
    encoded = schema.escaped(name)
    assert "#" not in encoded
    assert encoded.replace("%23", "#").replace("%25", "%") == name


@given(hostile_ids, hostile_ids)
def test_distinct_groups_share_no_partition_key(a: str, b: str) -> None:
    if a == b:
        return
    assert not partition_keys_of(a) & partition_keys_of(b)


@given(hostile_ids, st.sampled_from(["#M1", "#P3", "#I", "#S0", "#J2", "#C0123abcd#1", "#3"]))
def test_a_group_named_like_another_groups_items_stays_apart(base: str, suffix: str) -> None:
    # The regression key escaping fixed: `baz#P3` was group `baz`'s payload shard 3.
    assert not partition_keys_of(base) & partition_keys_of(base + suffix)


@given(
    st.text(min_size=1, max_size=TOPIC_NAME_MAX_CHARS),
    st.text(min_size=1, max_size=TOPIC_NAME_MAX_CHARS),
    st.integers(0, 99_999),
    st.integers(0, 99_999),
)
def test_offset_keys_of_distinct_partitions_differ(t1: str, t2: str, p1: int, p2: int) -> None:
    if (t1, p1) == (t2, p2):
        return
    k1, k2 = schema.offset_key("g", t1, p1), schema.offset_key("g", t2, p2)
    assert k1 != k2


@given(hostile_ids)
def test_no_key_passes_dynamodbs_limits(name: str) -> None:
    # Partition keys at most 2,048 bytes, sort keys at most 1,024 (the id is a sort key of the
    # listing index and of topic subscriber items).
    for pk in partition_keys_of(name):
        assert len(pk.encode()) <= 2048
    assert len(name.encode()) <= 1024
    assert len(schema.topic_subscribers_pk("t" * TOPIC_NAME_MAX_CHARS).encode()) <= 2048


def test_the_longest_ids_fit_the_key_limits() -> None:
    for name in ("\U0001f600" * GROUP_ID_MAX_CHARS, "#" * GROUP_ID_MAX_CHARS):
        test_no_key_passes_dynamodbs_limits.hypothesis.inner_test(name)  # type: ignore[attr-defined]
