"""The classic identity rule (core/classic/identity.py): who a classic request says it is."""

from __future__ import annotations

from dataclasses import replace

from groupcoord.core.classic.identity import identity_error, needs_instance_owner
from groupcoord.core.classic.model import ClassicMember
from groupcoord.errors import Errors

MEMBER = ClassicMember(member_id="m1", instance_id="i1")


def test_an_unknown_member_is_25_or_82_when_its_instance_is_anothers() -> None:
    assert identity_error(None, "m9", None, None) == Errors.UNKNOWN_MEMBER_ID
    assert identity_error(None, "m9", "i1", "m1") == Errors.FENCED_INSTANCE_ID
    assert identity_error(None, "m9", "i1", "m9") == Errors.UNKNOWN_MEMBER_ID
    pending = replace(MEMBER, pending=True)
    assert identity_error(pending, "m1", None, None) == Errors.UNKNOWN_MEMBER_ID
    assert identity_error(pending, "m1", None, None, pending_is_member=True) is None
    assert needs_instance_owner(None) and needs_instance_owner(pending)
    assert not needs_instance_owner(pending, pending_is_member=True)


def test_ownership_comes_before_the_instance_check() -> None:
    never = lambda member: False  # noqa: E731 - a caller that may act as nobody
    assert identity_error(MEMBER, "m1", "i1", None, may_act_as=never) == 30
    assert identity_error(MEMBER, "m1", "i2", None, may_act_as=never) == 30
    assert identity_error(MEMBER, "m1", "i2", None) == Errors.FENCED_INSTANCE_ID
    assert identity_error(MEMBER, "m1", "i1", None, may_act_as=lambda m: True) is None
    assert identity_error(MEMBER, "m1", None, None) is None
