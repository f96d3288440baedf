"""Who reads a group's members when its next check (`dl`) falls due.

A group's timer check reads every member. In a big group many requests find the check due at
once, so one of them claims it first (a conditional write moving `dl` a little ahead) and the
others go on without reading: the requests of 5,000 members must not all list them. In a small
group the claim costs more than it saves: its write (and the deadline index's, as `dl` moves)
is paid on every check, while two requests meeting the same due check are rare there and a
second read of a few dozen members is cheap. Below CLAIM_FROM_MEMBERS the check is not
claimed; its one write is still conditional on the group as read, so two checks that meet
apply one result.
"""

from __future__ import annotations

# At 5 s heartbeats a group of N members gets N/5 requests a second; a check lasting tens of
# ms meets another about N/100 of the time. At 100 members a claim (1 write unit, 2 more in
# the deadline index) costs about what the second reads it saves (a read unit per member shard).
CLAIM_FROM_MEMBERS = 100


def check_is_claimed(member_count: int) -> bool:
    """Whether a due timer check of a group with `member_count` members is claimed first."""
    return member_count >= CLAIM_FROM_MEMBERS
