"""Who waits on whom, kept on the holder's side: a target install records on each member item
the members whose new target waits on partitions that member holds (the inverse of their
`waitOn`), so that a release finds whom to tell (core/push.release_notice_members) in its own
item and a read of those few, not in a read of every member of the group.

A holder that many wait on (a cold start's first member holds every partition) names none:
`None`, read the group, as a long list would bloat an item that each of its heartbeats reads
and writes. An item written before waiters were kept says nothing, so `None` too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# The most waiters one member item names (member ids of up to ~40 bytes: a few hundred bytes,
# and a batch read of as many items costs about a query of an eighth of the group).
WAITERS_LISTED_MAX = 8

# The members waiting on a holder; None: too many or unknown (read the whole group).
Waiters = tuple[str, ...] | None


def waiters_by_holder(waits_on: Mapping[str, Iterable[str]]) -> dict[str, Waiters]:
    """Member id -> the holders it waits on, turned into holder -> its waiters (sorted; None
    past WAITERS_LISTED_MAX). A holder no one waits on is left out (it has none)."""
    found: dict[str, set[str]] = {}
    for waiter, holders in waits_on.items():
        for holder in holders:
            found.setdefault(holder, set()).add(waiter)
    return {
        holder: tuple(sorted(waiters)) if len(waiters) <= WAITERS_LISTED_MAX else None
        for holder, waiters in found.items()
    }


def waiters_grew(stored: Waiters, found: Waiters) -> bool:
    """Whether an install must write a holder's waiters that nothing else of it changed: only
    when it found a waiter the item does not cover. More names than needed cost a read of each
    at a release (the rule then leaves out whoever waits no more); a missing one, the waiter's
    notice."""
    if stored is None:
        return False
    return found is None or not set(found) <= set(stored)
