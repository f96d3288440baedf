"""Who is calling and what they may do: the caller of a request (its principal, its host) and
the authorizer built from the ACLs, as each function instance caches them.

Authorization is off unless `groupcoord.authorizer.enabled` is set, as a Kafka cluster without
an authorizer: then every caller may do everything. When on, the ACLs (store/acls.py) are read
once per instance and re-read when their version moved, checked at most every
`groupcoord.acl.cache.ms`: a changed ACL takes effect within that long, and a steady request
costs no read for it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..core.acls import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    Authorizer,
    AuthorizerConfig,
    ResourceType,
    operations_bitfield,
)
from ..core.ownership import may_act_as
from ..core.principals import ANONYMOUS
from ..settings import Settings

if TYPE_CHECKING:
    # For the annotations only: the store facade imports every repository, which a function's
    # init need not (docs/performance.md, "Cold start").
    from ..store.store import Store


@dataclass(frozen=True)
class Caller:
    """The caller of one request. `authorizer` is None when authorization is off."""

    principal: str = ANONYMOUS
    host: str = ""
    authorizer: Authorizer | None = None

    @property
    def checked(self) -> bool:
        return self.authorizer is not None

    def may(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        if self.authorizer is None:
            return True
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)

    def may_on_group(self, operation: AclOperation, group_id: str) -> bool:
        return self.may(operation, ResourceType.GROUP, group_id)

    def may_on_topic(self, operation: AclOperation, topic: str) -> bool:
        return self.may(operation, ResourceType.TOPIC, topic)

    def may_on_cluster(self, operation: AclOperation) -> bool:
        return self.may(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def may_act_as(self, owner: str | None) -> bool:
        """Whether the caller may act as a member created by `owner` (or take over its static
        instance): with the authorizer on, only the principal that created a member may drive
        it, even where another principal may READ the group (Kafka has no such rule: any
        principal with READ may). A member of unknown owner (created before owners were
        recorded) is anyone's; a super user may act as any member (an operator removing a
        static member, say)."""
        return may_act_as(self.principal, owner, enforced=self.bound_to_own_members)

    @property
    def bound_to_own_members(self) -> bool:
        """Whether the caller may act only as members it created (authorizer on, not a super
        user)."""
        return (
            self.authorizer is not None and self.principal not in self.authorizer.config.super_users
        )

    def operations(self, resource_type: ResourceType, name: str) -> int:
        """authorizedOperations of a described resource (Kafka's bit field); every operation
        the type supports when authorization is off."""
        if self.authorizer is None:
            return operations_bitfield(SUPPORTED_OPERATIONS[resource_type])
        allowed = self.authorizer.authorized_operations(
            self.principal, self.host, resource_type, name
        )
        return operations_bitfield(allowed)


EVERYONE = Caller()


class AclCache:
    """One function instance's copy of the ACLs, as an Authorizer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._authorizer: Authorizer | None = None
        self._version = -1
        self._checked_at_ms: int | None = None

    def authorizer(self, store: Store, config: AuthorizerConfig, now_ms: int) -> Authorizer:
        with self._lock:
            fresh_enough = (
                self._authorizer is not None
                and self._checked_at_ms is not None
                and 0 <= now_ms - self._checked_at_ms < store.settings.acl_cache_ms
                and self._authorizer.config == config
            )
            if fresh_enough:
                assert self._authorizer is not None
                return self._authorizer
            # The version only grows: a reload is due only when it is newer than ours (an
            # eventually consistent read may lag; it never makes us drop a newer set).
            if self._authorizer is None or store.acls.version() > self._version:
                snapshot = store.acls.load()
                self._authorizer = Authorizer(snapshot.bindings, config)
                self._version = snapshot.version
            elif self._authorizer.config != config:
                self._authorizer = Authorizer(self._authorizer.bindings, config)
            self._checked_at_ms = now_ms
            return self._authorizer

    def invalidate(self) -> None:
        """Forget the copy: this instance just changed the ACLs, and its own next request
        must see the change. The version is forgotten too: the next check's eventually
        consistent read of it may still show the old one, and must reload all the same (the
        load reads the version consistently)."""
        with self._lock:
            self._checked_at_ms = None
            self._version = -1


# One cache per store (a function instance has one; `serve`'s tests run several in a process).
_CACHES: weakref.WeakKeyDictionary[Store, AclCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def acl_cache(store: Store) -> AclCache:
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = AclCache()
        return cache


def authorizer_config(settings: Settings) -> AuthorizerConfig:
    return AuthorizerConfig(
        super_users=settings.super_user_principals,
        allow_everyone_if_no_acl_found=settings.allow_everyone_if_no_acl_found,
    )


def caller_of(settings: Settings, store: Store, principal: str, host: str, now_ms: int) -> Caller:
    """The caller of a request: with the instance's authorizer when authorization is on."""
    if not settings.authorizer_enabled:
        return Caller(principal, host, None)
    authorizer = acl_cache(store).authorizer(store, authorizer_config(settings), now_ms)
    return Caller(principal, host, authorizer)


def describable_by(
    store: Store, principal: str | None, host: str, now_ms: int
) -> Callable[[str], bool] | None:
    """Which topics a member's regex may match: those its principal may DESCRIBE (from `host`,
    its address at its last heartbeat), when the authorizer is on; None (every topic)
    otherwise, or for a member of unknown principal (created before principals were kept)."""
    if not store.settings.authorizer_enabled or principal is None:
        return None
    caller = caller_of(store.settings, store, principal, host, now_ms)
    return lambda topic: caller.may_on_topic(AclOperation.DESCRIBE, topic)
