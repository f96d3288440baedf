"""core/streams/visibility.py: a streams group's source regexes resolve only the topics every
member may describe; named topics are read whatever the regexes; the fingerprint moves with
what was resolved and nothing else."""

from __future__ import annotations

from groupcoord.core.streams.topology import Subtopology, TopicInfo, Topology
from groupcoord.core.streams.visibility import all_visible, readable_topics, resolved_digest
from groupcoord.core.topics import TopicRecord

TOPOLOGY = Topology(
    epoch=1,
    subtopologies=(
        Subtopology("0", source_topic_regex=("t.*",)),
        Subtopology(
            "1",
            source_topics=("named",),
            state_changelog_topics=(TopicInfo("app-store-changelog"),),
        ),
    ),
)
TOPICS = [
    TopicRecord("ta-secret", "A", 3),
    TopicRecord("tb-own", "B", 1),
    TopicRecord("named", "C", 2),
    TopicRecord("app-store-changelog", "D", 2),
    TopicRecord("other", "E", 9),
]


def names(topics: list[TopicRecord]) -> list[str]:
    return [t.name for t in topics]


def test_a_regex_resolves_what_every_member_may_describe() -> None:
    everyone = readable_topics(TOPOLOGY, TOPICS, None)
    assert names(everyone) == ["ta-secret", "tb-own", "named", "app-store-changelog"]
    bob = all_visible([lambda t: t.startswith("tb-"), None])
    assert names(readable_topics(TOPOLOGY, TOPICS, bob)) == [
        "tb-own",
        "named",
        "app-store-changelog",
    ]
    both = all_visible([lambda t: t.startswith("tb-"), lambda t: t.startswith("ta-")])
    assert names(readable_topics(TOPOLOGY, TOPICS, both)) == ["named", "app-store-changelog"]
    assert all_visible([None, None]) is None


def test_the_fingerprint_moves_only_with_what_was_resolved() -> None:
    bob = all_visible([lambda t: t.startswith("tb-")])
    before = resolved_digest(readable_topics(TOPOLOGY, TOPICS, bob))
    grown = [TopicRecord("ta-secret", "A", 8), *TOPICS[1:]]
    assert resolved_digest(readable_topics(TOPOLOGY, grown, bob)) == before
    recreated = [TOPICS[0], TopicRecord("tb-own", "F", 1), *TOPICS[2:]]
    assert resolved_digest(readable_topics(TOPOLOGY, recreated, bob)) != before
    named_grown = [*TOPICS[:2], TopicRecord("named", "C", 4), *TOPICS[3:]]
    assert resolved_digest(readable_topics(TOPOLOGY, named_grown, bob)) != before
