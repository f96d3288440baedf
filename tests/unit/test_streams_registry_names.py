"""Which registry topics a streams topology's configuration reads."""

from groupcoord.core.streams.topology import Subtopology, TopicInfo, Topology


def test_named_sources_and_internal_topics_are_read() -> None:
    topology = Topology(
        epoch=1,
        subtopologies=(
            Subtopology(
                "0",
                source_topics=("words",),
                repartition_sink_topics=("app-repartition",),
            ),
            Subtopology(
                "1",
                source_topics=("app-repartition",),
                repartition_source_topics=(TopicInfo("app-repartition"),),
                state_changelog_topics=(TopicInfo("app-counts-changelog"),),
            ),
        ),
    )
    assert topology.registry_names() == {"words", "app-repartition", "app-counts-changelog"}


def test_a_source_regex_reads_the_whole_registry() -> None:
    topology = Topology(
        epoch=1,
        subtopologies=(
            Subtopology("0", source_topics=("words",)),
            Subtopology("1", source_topic_regex=("orders-.*",)),
        ),
    )
    assert topology.registry_names() is None
