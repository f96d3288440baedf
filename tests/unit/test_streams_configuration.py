"""Topology configuration (core/streams/configuration.py): missing sources, repartition
counts to a fixpoint, co-partitioning, changelog counts, internal topics to create, and the
topologies that can never be configured (130)."""

from __future__ import annotations

import pytest

from groupcoord.core.streams.configuration import (
    InternalTopic,
    InvalidTopology,
    StatusCode,
    configure,
    summarize,
)
from groupcoord.core.streams.topology import (
    CopartitionGroup,
    Subtopology,
    TopicInfo,
    Topology,
    check_topology,
)


def topology(*subs: Subtopology, epoch: int = 1) -> Topology:
    return Topology(epoch, tuple(subs))


def word_count() -> Topology:
    """Sub-topology 0 reads `words` and repartitions by word into `counts-repartition`;
    sub-topology 1 reads that and keeps a store with a changelog."""
    return topology(
        Subtopology("0", source_topics=("words",), repartition_sink_topics=("app-rep",)),
        Subtopology(
            "1",
            source_topics=("app-rep",),
            repartition_source_topics=(TopicInfo("app-rep"),),
            state_changelog_topics=(TopicInfo("app-store-changelog"),),
        ),
    )


def test_missing_source_topics_are_status_1_and_no_tasks() -> None:
    configured = configure(word_count(), {})
    assert configured.status is StatusCode.MISSING_SOURCE_TOPICS
    assert configured.detail == "Source topics words are missing."
    assert not configured.is_ready and not configured.task_counts


def test_summary_names_three_topics_and_counts_the_rest() -> None:
    assert summarize(["e", "d", "c", "b", "a"]) == "a, b, c and 2 additional topics"


def test_repartition_and_changelog_counts_follow_the_largest_source() -> None:
    configured = configure(word_count(), {"words": 6})
    assert configured.status is StatusCode.MISSING_INTERNAL_TOPICS
    assert configured.to_create == (
        InternalTopic("app-rep", 6),
        InternalTopic("app-store-changelog", 6),
    )
    assert "app-rep" in configured.detail


def test_ready_once_internal_topics_exist() -> None:
    configured = configure(word_count(), {"words": 6, "app-rep": 6, "app-store-changelog": 6})
    assert configured.is_ready
    assert configured.task_counts == {"0": 6, "1": 6}
    assert configured.stateful == frozenset({"1"})
    assert configured.source_topics == {"0": ("words",), "1": ("app-rep",)}


def test_an_existing_internal_topic_with_another_count_is_status_2() -> None:
    configured = configure(word_count(), {"words": 6, "app-rep": 4})
    assert configured.status is StatusCode.INCORRECTLY_PARTITIONED_TOPICS
    assert "app-rep" in configured.detail


def test_repartition_counts_reach_a_fixpoint_through_a_chain() -> None:
    # 2 reads r1 (written by 1, which reads r0, written by 0): listed out of order.
    chain = topology(
        Subtopology("2", source_topics=("r1",), repartition_source_topics=(TopicInfo("r1"),)),
        Subtopology(
            "1",
            source_topics=("r0",),
            repartition_source_topics=(TopicInfo("r0"),),
            repartition_sink_topics=("r1",),
        ),
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("r0",)),
    )
    configured = configure(chain, {"in": 3})
    assert {t.name: t.partitions for t in configured.to_create} == {"r0": 3, "r1": 3}


def test_a_fixed_repartition_count_is_kept() -> None:
    fixed = topology(
        Subtopology("0", source_topics=("in",), repartition_sink_topics=("r",)),
        Subtopology("1", source_topics=("r",), repartition_source_topics=(TopicInfo("r", 10),)),
    )
    assert configure(fixed, {"in": 3}).to_create == (InternalTopic("r", 10),)


def test_a_loop_of_repartition_topics_is_invalid() -> None:
    loop = topology(
        Subtopology(
            "0",
            source_topics=("b",),
            repartition_source_topics=(TopicInfo("b"),),
            repartition_sink_topics=("a",),
        ),
        Subtopology(
            "1",
            source_topics=("a",),
            repartition_source_topics=(TopicInfo("a"),),
            repartition_sink_topics=("b",),
        ),
    )
    with pytest.raises(InvalidTopology, match="loops"):
        configure(loop, {})


def test_a_repartition_source_nothing_writes_is_invalid() -> None:
    orphan = topology(
        Subtopology("0", source_topics=("in", "r"), repartition_source_topics=(TopicInfo("r"),))
    )
    with pytest.raises(InvalidTopology, match="never used as a sink"):
        configure(orphan, {"in": 2})


def joined(left: int, right: int) -> tuple[Topology, dict[str, int]]:
    join = Subtopology(
        "0",
        source_topics=("left", "right"),
        copartition_groups=(CopartitionGroup(source_topics=(0, 1)),),
    )
    return topology(join), {"left": left, "right": right}


def test_copartitioned_sources_with_different_counts_are_status_2() -> None:
    configured = configure(*joined(4, 6))
    assert configured.status is StatusCode.INCORRECTLY_PARTITIONED_TOPICS
    assert configured.detail == (
        "Following topics do not have the same number of partitions: [{left=4, right=6}]"
    )
    assert not configured.task_counts


def test_copartitioned_sources_with_equal_counts_are_ready() -> None:
    configured = configure(*joined(4, 4))
    assert configured.is_ready and configured.task_counts == {"0": 4}


def test_a_repartition_topic_copartitioned_with_a_source_takes_its_count() -> None:
    # The repartition topic's writer reads an 8-partition topic, but it is joined with a
    # 3-partition table: co-partitioning wins.
    join = topology(
        Subtopology("0", source_topics=("big",), repartition_sink_topics=("r",)),
        Subtopology(
            "1",
            source_topics=("table", "r"),
            repartition_source_topics=(TopicInfo("r"),),
            copartition_groups=(
                CopartitionGroup(source_topics=(0,), repartition_source_topics=(0,)),
            ),
        ),
    )
    configured = configure(join, {"big": 8, "table": 3})
    assert configured.to_create == (InternalTopic("r", 3),)


def test_a_regex_source_reads_every_matching_topic_but_internal_ones() -> None:
    regex = topology(
        Subtopology(
            "0",
            source_topic_regex=("orders-.*",),
            state_changelog_topics=(TopicInfo("orders-app-changelog"),),
        )
    )
    counts = {"orders-eu": 2, "orders-us": 5, "other": 9, "orders-app-changelog": 5}
    configured = configure(regex, counts)
    assert configured.is_ready
    assert configured.task_counts == {"0": 5}
    assert configured.source_topics == {"0": ("orders-eu", "orders-us")}


def test_a_regex_that_matches_nothing_is_status_1() -> None:
    regex = topology(Subtopology("0", source_topic_regex=("orders-.*",)))
    assert configure(regex, {"other": 1}).status is StatusCode.MISSING_SOURCE_TOPICS


def kafka_streams_word_count() -> Topology:
    """The word count as Kafka Streams sends it: the repartition topic only in
    repartitionSourceTopics, never in sourceTopics (StreamThread removes it)."""
    return topology(
        Subtopology("0", source_topics=("words",), repartition_sink_topics=("app-rep",)),
        Subtopology(
            "1",
            repartition_source_topics=(TopicInfo("app-rep", 0, -1),),
            state_changelog_topics=(TopicInfo("app-store-changelog", 0, -1),),
        ),
    )


def test_a_subtopology_reading_only_a_repartition_topic_is_configured() -> None:
    shape = kafka_streams_word_count()
    assert check_topology(shape) is None
    first = configure(shape, {"words": 6})
    assert {t.name: t.partitions for t in first.to_create} == {
        "app-rep": 6,
        "app-store-changelog": 6,
    }
    configured = configure(shape, {"words": 6, "app-rep": 6, "app-store-changelog": 6})
    assert configured.is_ready
    assert configured.task_counts == {"0": 6, "1": 6}
    assert configured.stateful == frozenset({"1"})
    assert configured.source_topics == {"0": ("words",), "1": ("app-rep",)}


def test_repartition_only_sources_are_copartitioned_by_their_indexes() -> None:
    # A join after selectKey on both sides: sub-topology 2 reads two repartition topics only,
    # co-partitioned; their writers read 4 and 6 partitions, so both get the larger.
    join = topology(
        Subtopology("0", source_topics=("left",), repartition_sink_topics=("l-rep",)),
        Subtopology("1", source_topics=("right",), repartition_sink_topics=("r-rep",)),
        Subtopology(
            "2",
            repartition_source_topics=(TopicInfo("l-rep"), TopicInfo("r-rep")),
            state_changelog_topics=(TopicInfo("join-store-changelog"),),
            copartition_groups=(CopartitionGroup(repartition_source_topics=(0, 1)),),
        ),
    )
    first = configure(join, {"left": 4, "right": 6})
    assert {t.name: t.partitions for t in first.to_create} == {
        "l-rep": 6,
        "r-rep": 6,
        "join-store-changelog": 6,
    }
    counts = {"left": 4, "right": 6, "l-rep": 6, "r-rep": 6, "join-store-changelog": 6}
    assert configure(join, counts).task_counts == {"0": 4, "1": 6, "2": 6}
    # A repartition topic created with another count breaks the group: status 2.
    broken = configure(join, counts | {"l-rep": 4})
    assert broken.status is StatusCode.INCORRECTLY_PARTITIONED_TOPICS
