"""Members belong to the principal that created them (beyond Kafka, where any principal with READ
on a group may drive any of its members): with the authorizer on, a request that names a member
(its member id, or a static member's instance id) from another principal is refused with 30
GROUP_AUTHORIZATION_FAILED and changes nothing. Members record their creator whether or not the
authorizer is on; one created before creators were recorded (owner None) is anyone's."""

from __future__ import annotations

NOT_OWNER_MESSAGE = "The member belongs to another principal."


def may_act_as(caller: str, owner: str | None, enforced: bool) -> bool:
    """Whether `caller` may act as a member created by `owner`."""
    return not enforced or owner is None or owner == caller
