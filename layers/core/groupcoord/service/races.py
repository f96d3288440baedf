"""What a request does when it loses a race: the store refused its write because someone changed
the group (or member, topic, offsets' fence) since it was read (store.errors.Conflict, or one of
its kinds). It reads again and decides again, after a short random pause, at most
RACE_ATTEMPTS times; then the group is busy (GroupBusy), which each API answers with its
retriable error. One policy for every API."""

from __future__ import annotations

import random
import time

RACE_ATTEMPTS = 12
# The pause grows with the attempt (full jitter): requests that collided on one version would
# otherwise collide again. Capped so that twelve attempts stay well under a second on average.
_FIRST_PAUSE_S = 0.005
_MAX_PAUSE_S = 0.1


class GroupBusy(Exception):
    """The group kept changing under a request for RACE_ATTEMPTS attempts."""


def back_off(attempt: int) -> None:
    """Pause before attempt `attempt + 1`."""
    time.sleep(random.uniform(0, min(_MAX_PAUSE_S, _FIRST_PAUSE_S * 2**attempt)))
