"""A member that is not joined (before its first poll) has nothing to heartbeat: its heartbeat
thread waits instead of spinning (it once spun on wait(0) at a whole core)."""

from __future__ import annotations

import time

from groupcoord.client import GroupMember


def test_an_unpolled_member_uses_almost_no_cpu() -> None:
    # Nothing listens on port 9: the member sends nothing until poll().
    member = GroupMember("http://127.0.0.1:9", "idle-group", topics=["t"])
    try:
        cpu_before, wall_before = time.process_time(), time.monotonic()
        time.sleep(1.0)
        cpu = time.process_time() - cpu_before
        wall = time.monotonic() - wall_before
    finally:
        member.close()
    # A spinning thread takes most of a core (1.85 CPU-seconds in 2 s was seen); a waiting one
    # wakes 20 times a second for microseconds. Generous for a busy machine.
    assert cpu < 0.25 * wall, f"{cpu:.2f} s of CPU in {wall:.2f} s"
