"""One member-based heartbeat (KIP-848's consumer-group-heartbeat, KIP-1071's
streams-group-heartbeat): the retry, the dispatch on the member epoch (-1 leave, -2 static
leave, 0 join, n heartbeat), the join's routes (a new member, a rejoin, a static takeover), the
write after a membership change and the reconciliation step. A family subclasses
MemberHeartbeat and supplies only its hooks: `prepare` (due expiries, topic changes, target
installs), `apply` (the request on a member), `new_member` (a joiner's plan), `install` (the
target after a change), the reconciliation plan and its writes, and its `response`.

A steady heartbeat reads the group item (eventually consistent) and the member item
(consistent) and writes only the member item, when its session needs renewing
(core/session_renewal.py). An error decided on the eventually consistent read is confirmed on
consistent reads before it is answered. A change of the membership is one transaction with
the group item conditioned on its version; a lost race is re-read (consistently) and decided
again. Whom a join names (its member id, its static instance, a takeover) is decided, and the
caller's right to act as that member checked, before anything is written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from ...core.modern.access import Conversion, GroupAccess, plan_group_access
from ...core.modern.refusal import Refusal
from ...core.modern.static import check_identity, instance_claim, needs_instance_owner
from ...core.ownership import NOT_OWNER_MESSAGE
from ...errors import Errors
from ...store.errors import Conflict
from ...store.member_groups import MemberGroupStore
from ...store.stored_group import StoredGroup
from ...store.writes import NO_WRITES, Writes
from ..context import ApiContext
from ..races import DecideAgain, retry_on_race

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
# Attempts to lower a group's deadline that another write moved (best effort).
LOWER_DEADLINE_ATTEMPTS = 3

G = TypeVar("G")
M = TypeVar("M")
P = TypeVar("P")  # a family's reconciliation plan
R = TypeVar("R")  # a family's response


class Request(Protocol):
    @property
    def group_id(self) -> str: ...
    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def member_epoch(self) -> int: ...


class Answer(Exception):
    """A Kafka error answer, raised from deep in the flow."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class Installed(Protocol[M]):
    """An install this request completed: every member as it left them."""

    @property
    def members(self) -> dict[str, M]: ...


class Joining(Generic[G, M]):
    """A new member's join as its family plans it: the member and the group to write, and the
    family's own writes of the join (a streams joiner's report)."""

    def __init__(self, member: M, group: G, writes: Writes = NO_WRITES) -> None:
        self.member = member
        self.group = group
        self.writes = writes


def refusal_answer(answer: Callable[..., R], request: Request, refusal: Refusal) -> R:
    """The family's `answer` of a refusal."""
    return answer(
        error_code=refusal.error, error_message=refusal.message, member_id=request.member_id
    )


def run_heartbeat(
    request: Request,
    ctx: ApiContext,
    heartbeat: Callable[[bool], MemberHeartbeat[Any, Any, Any, R]],
    answer: Callable[..., R],
) -> R:
    """`heartbeat(consistent).run()` until it does not lose a race: first on an eventually
    consistent read of the group, whose refusals are confirmed on consistent reads before
    they are answered (`answer`: the family's response)."""

    def once(n: int) -> R:
        consistent = n > 0
        try:
            return heartbeat(consistent).run()
        except Answer as error:
            if consistent:
                return refusal_answer(answer, request, error.refusal)
            # Decided on an eventually consistent read of the group, which may lag a write of
            # the last second (a group just created, a member's epoch just bumped).
            raise DecideAgain() from None

    busy = Refusal(Errors.COORDINATOR_LOAD_IN_PROGRESS, "The group is busy; retry the heartbeat.")
    return retry_on_race(ctx.clock, once, busy=lambda: refusal_answer(answer, request, busy))


class MemberHeartbeat(Generic[G, M, P, R]):
    conversion: Conversion
    # The family's pure planners (core/<family>/heartbeat_rules.py).
    takeover_rule: Callable[..., Refusal | Any]
    reconcile_rule: Callable[..., Any]

    def __init__(
        self,
        request: Request,
        ctx: ApiContext,
        consistent: bool,
        store: MemberGroupStore[Any, Any],
    ) -> None:
        self.request = request
        self.ctx = ctx
        self.consistent = consistent
        self.store = store
        self.now = ctx.now_ms

    # --- the hooks a family supplies ---

    def before_group(self) -> None:
        """Checks of the request before the group is read or created (none by default)."""

    def create(self, replacing: StoredGroup | None) -> None:
        """A new group of the family (over `replacing`, an empty classic group read)."""
        raise NotImplementedError

    def upgrade(self, found: StoredGroup) -> None:
        """A join's upgrade of the classic group `found` (families that upgrade)."""
        raise Conflict(found.group_id)

    def prepare(self, found: StoredGroup) -> G:
        """The group `found` (of the family's type) with what is due settled: expiries,
        topic changes, target installs."""
        raise NotImplementedError

    def apply(self, member: M) -> tuple[M, bool]:
        """The member with the request applied; True when what its target is computed from
        changed (a new group epoch)."""
        raise NotImplementedError

    def check_epoch(self, member: M) -> Refusal | None:
        """The member epoch check of a heartbeat (epoch > 0)."""
        raise NotImplementedError

    def reported(self, group: G, member: M) -> bool:
        """What a rejoin or a heartbeat reports besides the member (none by default); True
        when it makes a new target due."""
        return False

    def new_member(self, group: G) -> Joining[G, M]:
        """The caller as a member `group` does not know yet, or refused (Answer)."""
        raise NotImplementedError

    def session_ms(self) -> int:
        """The session timeout a join or a renewal runs."""
        raise NotImplementedError

    def renewal_slack_ms(self, member: M) -> int:
        """How far past one session a renewal of `member` (as read) sets the deadline
        (core/session_renewal.py)."""
        raise NotImplementedError

    def takeover(self, owner: M) -> M:
        """The member a static rejoin under the request's member id makes of `owner`, or
        refused (Answer, 111)."""
        req = self.request
        assert req.instance_id is not None
        copy = self.takeover_rule(
            owner, req.member_id, req.instance_id, self.now, self.session_ms()
        )
        if isinstance(copy, Refusal):
            raise Answer(copy)
        return copy

    def taking_over(self, group: G, owner: M) -> M:
        """`owner` as a takeover finds it (a family may release it first)."""
        return owner

    def takeover_writes(self, group: G, successor: M) -> Writes:
        """The family's own writes of a takeover (computed before the request is applied)."""
        return NO_WRITES

    def before_writes(self, group: G) -> G:
        """A join's own change of the group, once whom it names is decided (none by default)."""
        return group

    def joined(self, group: G, joining: Joining[G, M]) -> tuple[G, Writes]:
        """A new member's group to write, with the family's writes of a first join."""
        return joining.group, NO_WRITES

    def moved(self, group: G, before: M, after: M, changed: bool) -> G | None:
        """The group after `before` became `after` (`changed`: what the target is computed
        from); None: no group write."""
        raise NotImplementedError

    def without(self, group: G, member: M) -> G:
        """The group once `member` left."""
        raise NotImplementedError

    def leaves_otherwise(self, group: G, member: M) -> bool:
        """True when the leave of `member` was done another way (a downgrade)."""
        return False

    def ensure_target(self, group: G) -> object:
        """The target of the group installed, if due (after a leave)."""
        raise NotImplementedError

    def install(self, group: G) -> tuple[G, Installed[M] | None]:
        """After a membership write: the target installed at once (if this request may)."""
        raise NotImplementedError

    def static_leave(self, member: M) -> M:
        raise NotImplementedError

    def holdings(self, group: G, member: M, installed: Installed[M] | None) -> Any:
        """What the members `member` waits on still hold, when its reconciliation needs it."""
        raise NotImplementedError

    def plan(self, group: G, member: M, updated: M, held: Any) -> P:
        return self.reconcile_rule(  # type: ignore[no-any-return]
            group,
            member,
            updated,
            self.request,
            held,
            now=self.now,
            session_ms=self.session_ms(),
            renewal_slack_ms=self.renewal_slack_ms(member),
        )

    def write_plan(self, group: G, member: M, plan: P) -> G:
        """The plan's writes (the member, and what goes with it); the group as written."""
        raise NotImplementedError

    def lower_deadline_to(self, plan: P) -> int | None:
        return plan.lower_group_deadline_to  # type: ignore[attr-defined,no-any-return]

    def after_plan(self, group: G, plan: P) -> None:
        """What follows the plan's writes (none by default)."""

    def response(self, group: G, plan: P) -> R:
        raise NotImplementedError

    def left(self, epoch: int) -> R:
        """A leave's answer at `epoch`."""
        raise NotImplementedError

    # --- the dispatch ---

    def run(self) -> R:
        epoch = self.request.member_epoch
        if epoch == 0:
            self.before_group()
        group = self._group()
        if epoch == LEAVE_EPOCH:
            return self._leave(group)
        if epoch == STATIC_LEAVE_EPOCH:
            return self._static_leave(group)
        if epoch == 0:
            return self._join(group)
        return self._heartbeat(group)

    # --- the group ---

    def _group(self) -> G:
        gid = self.request.group_id
        found = self.store.read_group(gid, consistent=self.consistent)
        access = self._access(found)
        if access in (GroupAccess.CREATE, GroupAccess.REPLACE):
            self.create(found)
            if found is not None:  # a replaced empty classic group: its pending ids go
                self.ctx.store.classic.delete_classic_leftovers(gid, found.header.member_shards)
            found = self.store.read_group(gid, consistent=True)
            access = self._access(found)
            if access in (GroupAccess.CREATE, GroupAccess.REPLACE):
                raise Conflict(gid)  # gone again, or replaced meanwhile: decide again
        assert found is not None
        if access is GroupAccess.UPGRADE:
            self.upgrade(found)
            raise Conflict(gid)  # converted: decide again on the family's group
        return self.prepare(found)

    def _access(self, found: StoredGroup | None) -> GroupAccess:
        header = found.header if found is not None else None
        access = plan_group_access(
            self.request.group_id,
            header.group_type if header is not None else None,
            header.member_count if header is not None else 0,
            self.request.member_epoch,
            self.conversion,
        )
        if isinstance(access, Refusal):
            raise Answer(access)
        return access

    def _reload(self, group: G) -> G:
        fresh = self.store.group(self.request.group_id)
        if fresh is None:
            raise Conflict(self.request.group_id)
        return fresh

    # --- members ---

    def _member(self, group: G, member_id: str | None = None) -> M | None:
        return self.store.member(group, member_id or self.request.member_id, consistent=True)

    def _existing(self, group: G) -> M:
        """The member the request names, if it passes the static identity checks (25, 82)
        and the caller may act as it (30)."""
        req = self.request
        member = self._member(group)
        owner = None
        if needs_instance_owner(req.instance_id, member):
            assert req.instance_id is not None
            owner = self.store.instance_owner(group, req.instance_id)
        refusal = check_identity(req.group_id, req.member_id, req.instance_id, member, owner)
        if refusal is not None:
            raise Answer(refusal)
        assert member is not None
        return self._owned(member)

    def _owned(self, member: M) -> M:
        """`member`, if the caller may act as it (core/ownership.py); else refused with 30."""
        self._may_act_as(member.principal)  # type: ignore[attr-defined]
        return member

    def _may_act_as(self, principal: str | None) -> None:
        if not self.ctx.caller.may_act_as(principal):
            raise Answer(Refusal(Errors.GROUP_AUTHORIZATION_FAILED, NOT_OWNER_MESSAGE))

    # --- leaves ---

    def _leave(self, group: G) -> R:
        member = self._existing(group)
        if self.leaves_otherwise(group, member):
            return self.left(LEAVE_EPOCH)
        removal = self.store.remove_member(group, member)
        group = self.store.update_group(group, self.without(group, member), extra=removal)
        self.ensure_target(group)
        return self.left(LEAVE_EPOCH)

    def _static_leave(self, group: G) -> R:
        """-2: the member keeps what it holds for its instance's return within the session."""
        member = self._existing(group)
        self.store.write_member(group, self.static_leave(member))
        return self.left(STATIC_LEAVE_EPOCH)

    # --- joins ---

    def _join(self, group: G) -> R:
        member, owner, claimed_by = self._join_route(group)
        group = self.before_writes(group)
        if owner is not None:
            return self._take_over(group, owner)
        if member is not None:
            self.reported(group, member)
            updated, changed = self.apply(member)
            if not changed:
                return self._reconcile(group, member, updated)
            return self._rewrite(group, member, updated)
        return self._add_member(group, claimed_by)

    def _join_route(self, group: G) -> tuple[M | None, M | None, str | None]:
        """Who a join names, decided before it writes anything: the member it rejoins as, or
        the static member whose instance it takes over, each only if the caller may act as
        it (else 30, and the group is left as it was); and who claims its instance id. A
        takeover the owner did not release (111), and a new member of a full group (81), are
        refused here too."""
        req = self.request
        member = self._member(group)
        owner_id = None
        if req.instance_id is not None:
            owner_id = self.store.instance_owner(group, req.instance_id)
        if owner_id is not None and owner_id != req.member_id:
            owner = self._member(group, owner_id)
            if owner is not None:
                owner = self.taking_over(group, self._owned(owner))
                self.takeover(owner)
                return None, owner, owner_id
        if member is None:
            self.new_member(group)  # a full group refuses it before anything is written
        return (self._owned(member) if member is not None else None), None, owner_id

    def _take_over(self, group: G, owner: M) -> R:
        """A static member's rejoin under a new member id: it takes over what the owner held
        and its epoch, with no new group epoch unless what the target is computed from
        changed."""
        successor = self.takeover(owner)
        extra = self.takeover_writes(group, successor)
        # The successor is another process: the owner's push connection is not its own.
        fresh = replace(successor, principal=self.ctx.caller.principal, push_connection="")  # type: ignore[type-var]
        updated, changed = self.apply(fresh)
        writes = self.store.hand_over(group, owner, updated) + extra
        moved = self.moved(group, owner, updated, changed)
        if moved is not None:
            group = self.store.update_group(group, moved, extra=writes)
        else:
            self.store.transact(writes)
        return self._after_change(group)

    def _add_member(self, group: G, claimed_by: str | None) -> R:
        """A member the group does not know joins. `claimed_by` is whom the request's
        instance id is claimed by, if anyone: a removed member (a dangling claim) or the
        joiner itself."""
        joining = self.new_member(group)
        joiner = joining.member
        writes = self.store.put_member(group, joiner, new=True) + joining.writes
        claim = instance_claim(joiner.member_id, joiner.instance_id, claimed_by)  # type: ignore[attr-defined]
        if claim is not None:
            writes += self.store.claim_instance(group, joiner, claim.from_member_id)
        joined, first = self.joined(group, joining)
        return self._after_change(self.store.update_group(group, joined, extra=writes + first))

    def _rewrite(self, group: G, member: M, updated: M) -> R:
        """What the target is computed from changed: the member and a new group epoch in one
        write."""
        moved = self.moved(group, member, updated, True)
        assert moved is not None
        put = self.store.put_member(group, updated, new=False)
        return self._after_change(self.store.update_group(group, moved, extra=put))

    def _after_change(self, group: G) -> R:
        """After a membership write (`group` is the group as written): install the target at
        once (unless another install holds it back), then reconcile. The one place every
        change of a member-based group's target passes through."""
        group, installed = self.install(group)
        member = installed.members.get(self.request.member_id) if installed else None
        if member is None:
            member = self._member(group)
        if member is None:
            raise Conflict(self.request.group_id)
        updated, _ = self.apply(member)
        return self._reconcile(group, member, updated, installed)

    # --- heartbeats ---

    def _heartbeat(self, group: G) -> R:
        # Consistent: a heartbeat that writes nothing answers from this read alone, and a
        # member removed or moved to a new epoch must hear of it now.
        member = self._existing(group)
        refusal = self.check_epoch(member)
        if refusal is not None:
            raise Answer(refusal)
        due = self.reported(group, member)
        updated, changed = self.apply(member)
        if changed:
            return self._rewrite(group, member, updated)
        if due:
            bumped = self.moved(group, member, member, True)
            assert bumped is not None
            return self._after_change(self.store.update_group(group, bumped))
        return self._reconcile(group, member, updated)

    # --- reconciliation ---

    def _reconcile(
        self, group: G, member: M, updated: M, installed: Installed[M] | None = None
    ) -> R:
        held = self.holdings(group, member, installed)
        plan = self.plan(group, member, updated, held)
        group = self.write_plan(group, member, plan)
        deadline = self.lower_deadline_to(plan)
        if deadline is not None:
            self._lower_group_deadline(group, deadline)
        self.after_plan(group, plan)
        return self.response(group, plan)

    def _lower_group_deadline(self, group: G, deadline: int) -> None:
        """A rebalance timeout earlier than the group's next check: check earlier. Best
        effort: the next expiry recomputes the deadline from the members anyway."""
        current = group

        def attempt(_: int) -> None:
            nonlocal current
            try:
                self.store.update_group(current, replace(current, deadline=deadline))  # type: ignore[type-var]
            except Conflict:
                fresh = self.store.group(self.request.group_id)
                if fresh is None or (fresh.deadline is not None and fresh.deadline <= deadline):
                    return
                current = fresh
                raise DecideAgain() from None

        retry_on_race(self.ctx.clock, attempt, attempts=LOWER_DEADLINE_ATTEMPTS, busy=lambda: None)

    def _settle_state(self, group: G, state: str) -> None:
        """The group's listed state written when it changed (list-groups). Best effort: a
        group that moved meanwhile is left to its next check."""
        if state != group.state:  # type: ignore[attr-defined]
            with contextlib.suppress(Conflict):
                self.store.update_group(group, replace(group, state=state))  # type: ignore[type-var]
