"""The push channel's part of the cost model (bench/cost_model.py; docs/sessions.md, "Push"):
its calls measured in-process against DynamoDB Local, and the member-month with push on.

Measured: the push function's routes as API Gateway invokes them (a `$connect` of a member of
a 10-member consumer group, a `ping`, an orderly `$disconnect`; the authorizer off, the
template's default) and what posting one notice adds to the request that sends it (its read
of the member's connection): read and write units by the capacity audit, p50 handler times in
a second run without it. The post itself (one HTTPS call to API Gateway's `@connections`) is
not measured here: the model bills NOTICE_POST_MS of the sender's time for it.

Priced by bench/pricing.py (Model.push_month): a connected member heartbeats every 15 s and
renews its session on one heartbeat in 3 (core/session_renewal.py: a connected member's
slack), sends a keepalive about every 9 min (API Gateway answers it itself: a message, no
function), reconnects every 2 h, and hears PUSH_NOTICES_PER_MONTH notices (each brings two
heartbeats). The ping is measured for what one costs, but priced as none: a client sends it
only after a handshake that failed without a refusal. Consumer-protocol members only: the
client's classic members keep their interval.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext
from typing import Any

from bench.common import (
    TOPIC,
    Audited,
    InProcess,
    build_consumer_group_direct,
    create_topic,
    dynamodb_local,
    percentile,
    table,
)
from bench.cost import RENEWAL_SKIPS
from bench.pricing import (
    CONSUMER,
    FRONT_DOORS,
    FUNCTION_URL_DOOR,
    HEARTBEAT_S,
    MONTH_S,
    NOTICE_BEATS,
    PUSH_HEARTBEAT_S,
    PUSH_KEEPALIVE_S,
    PUSH_NOTICES_PER_MONTH,
    PUSH_PINGS_PER_MONTH,
    PUSH_RECONNECT_S,
    SESSION_S,
    Model,
    PushCall,
    PushCalls,
    check_interval_s,
    check_month,
)
from groupcoord.http.websocket import CONNECT, DISCONNECT, PING, make_push_handler
from groupcoord.local.events import LambdaContext
from groupcoord.service.push import notify_members
from groupcoord.store import capacity
from groupcoord.store.push import ConnectionPoster

# The target for a member-month with push on, behind a function URL.
PUSH_TARGET_USD = 0.15
# What one post to `@connections` adds to its sender's billed time (an HTTPS call within the
# region; assumed, not measured here).
NOTICE_POST_MS = 20.0
GROUP_SIZE = 10
# The machine's load averages (1, 5, 15 min) as the run starts: the durations billed depend
# on it.
LOAD_AT_START = os.getloadavg()
ROUTES = (CONNECT, PING, "notice", DISCONNECT)


class _Delivered:
    """A `@connections` client that delivers nothing: the post's time is NOTICE_POST_MS."""

    def post_to_connection(self, **_: Any) -> None:
        return None


def _event(route: str, connection_id: str, query: dict[str, str]) -> dict[str, Any]:
    context: dict[str, Any] = {
        "routeKey": route,
        "connectionId": connection_id,
        "identity": {"sourceIp": "127.0.0.1"},
    }
    if route == DISCONNECT:
        context["disconnectStatusCode"] = 1000  # the client's own close: no grace
    return {"requestContext": context, "queryStringParameters": query if route == CONNECT else None}


def _measured(coordinator: InProcess, call: Callable[[], None]) -> tuple[float, float, float]:
    """(read units, write units incl. GSI, ms) of one call; units only while audited."""
    audit = coordinator.audit
    with capacity.metered(), audit.measuring() if audit else nullcontext(Audited()) as found:
        started = time.perf_counter()
        call()
        ms = (time.perf_counter() - started) * 1000
    return found.read_units, found.write_units + found.index_write_units, ms


def _rounds(coordinator: InProcess, n: int) -> list[list[tuple[float, float, float]]]:
    """`n` rounds of a member's connection: $connect, ping, a notice posted to it, $disconnect."""
    group_id = f"push-{uuid.uuid4().hex[:8]}"
    sim, _ = build_consumer_group_direct(coordinator, group_id, GROUP_SIZE)
    query = {"groupId": group_id, "memberId": sim.ids[0]}
    store = coordinator.store
    store.push_poster = ConnectionPoster("http://127.0.0.1:9", lambda _: _Delivered())
    handler = make_push_handler()

    def step(route: str, connection_id: str) -> Callable[[], None]:
        if route == "notice":
            return lambda: None if notify_members(store, group_id, [sim.ids[0]]) else _fail(route)

        def invoke() -> None:
            answer = handler(_event(route, connection_id, query), LambdaContext("push"))
            if answer["statusCode"] != 200:
                _fail(f"{route}: {answer}")

        return invoke

    found = []
    for _ in range(n):
        connection_id = f"{uuid.uuid4().hex[:14]}="
        found.append([_measured(coordinator, step(r, connection_id)) for r in ROUTES])
    return found


def _fail(what: str) -> None:
    raise RuntimeError(f"push channel call failed: {what}")


def measure_push_calls(samples: int) -> PushCalls:
    """The push channel's calls (module docstring): units audited over `samples` rounds,
    times the p50 of as many rounds without the audit."""
    with dynamodb_local() as endpoint:
        coordinator = InProcess(endpoint, audit=True)
        create_topic(coordinator, TOPIC, 100)
        audited = _rounds(coordinator, samples)
        with coordinator.unaudited():
            timed = _rounds(coordinator, samples)
    calls = {}
    for i, route in enumerate(ROUTES):
        calls[route] = PushCall(
            read=sum(r[i][0] for r in audited) / samples,
            write=sum(r[i][1] for r in audited) / samples,
            ms=percentile([r[i][2] for r in timed], 50),
        )
    notice = calls["notice"]
    return PushCalls(
        connect=calls[CONNECT],
        ping=calls[PING],
        disconnect=calls[DISCONNECT],
        notice=PushCall(notice.read, notice.write, notice.ms + NOTICE_POST_MS),
    )


# --- the rows and the verdict ---

PUSH_LINES = (
    "front door",
    "Lambda requests",
    "Lambda duration",
    "DynamoDB writes",
    "DynamoDB reads",
    "WebSocket connection-minutes",
    "WebSocket messages",
    "push: Lambda",
    "push: DynamoDB",
)


def push_table(model: Model) -> str:
    """$ per member-month with push on, by line, per size and front door (consumer protocol)."""
    from bench.cost_model import usd

    rows = []
    for members in model.sizes(CONSUMER):
        for door, price in FRONT_DOORS.items():
            costs = model.push_month(CONSUMER, members, price)
            total = sum(costs.values())
            rows.append(
                (
                    f"{CONSUMER}, {members:,} members, {door}, push on",
                    *(usd(costs[line]) for line in PUSH_LINES),
                    f"**{usd(total)}**",
                    usd(_without_push(model, members, price)),
                )
            )
    return table(
        (
            "per member-month, push on",
            *("front door (API Gateway / function URL)", *PUSH_LINES[1:]),
            "total",
            f"without push ({HEARTBEAT_S:g} s heartbeat)",
        ),
        rows,
    )


def _without_push(model: Model, members: int, door_price: float) -> float:
    """The same member-month without push: a 5 s heartbeat at the default skips."""
    costs = model.month(CONSUMER, members, RENEWAL_SKIPS)
    return sum({**costs, "front door": door_price * model.beats_per_month}.values())


def calls_table(calls: PushCalls) -> str:
    """The push channel's calls as measured (units audited, p50 in-process), and the keepalive,
    which reaches no function."""
    rows = [
        (name, f"{c.read:.2f}", f"{c.write:.2f}", f"{c.ms:.1f}", count)
        for name, c, count in (
            ("$connect", calls.connect, f"{MONTH_S / PUSH_RECONNECT_S:,.0f}"),
            (
                "ping (and its pong), after an uncertain handshake only",
                calls.ping,
                f"{PUSH_PINGS_PER_MONTH:,.0f} (2 after such a handshake)",
            ),
            ("$disconnect", calls.disconnect, f"{MONTH_S / PUSH_RECONNECT_S:,.0f}"),
            (
                f"a notice, to its sender (+{NOTICE_POST_MS:g} ms for the post)",
                calls.notice,
                f"{PUSH_NOTICES_PER_MONTH:,.0f}",
            ),
        )
    ]
    rows.append(
        (
            "keepalive (API Gateway's own answer: no function, nothing back)",
            "0.00",
            "0.00",
            "-",
            f"{MONTH_S / PUSH_KEEPALIVE_S:,.0f}",
        )
    )
    return table(("push channel call", "RCU", "WCU", "ms in-process", "per member-month"), rows)


def _checks_share(model: Model, members: int) -> float:
    """$ per member-month of the group's timer checks with push on (a per-group cost, one
    check every session - interval / 2 at the connected member's interval)."""
    skips = model.push_skips(CONSUMER)
    interval_s = check_interval_s(CONSUMER, skips, interval_s=PUSH_HEARTBEAT_S)
    checks = check_month(model.checks[CONSUMER][members], interval_s, model.setting)
    return sum(checks.values()) / members


def _target_from(model: Model, url: float) -> float | None:
    """The group size from which a member-month meets the target: the timer checks fitted as
    fixed + slope x members per group-month over the smallest and largest sizes (as
    pricing.GroupFit), the rest per member; None if the per-member part alone misses it."""
    small, large = min(model.sizes(CONSUMER)), max(model.sizes(CONSUMER))
    group = {n: _checks_share(model, n) * n for n in (small, large)}
    # One size measured (a smoke run): no slope to fit, the checks taken as fixed.
    slope = (group[large] - group[small]) / (large - small) if large > small else 0.0
    fixed = group[small] - slope * small
    steady = sum(model.push_month(CONSUMER, large, url).values()) - group[large] / large
    if steady + slope > PUSH_TARGET_USD:
        return None
    return max(1.0, fixed / (PUSH_TARGET_USD - steady - slope))


def _verdicts(model: Model, url: float) -> str:
    """Each size's member-month behind a function URL against the target; for a size that
    misses it, by how much, and its share of the group's timer checks (a per-group cost)."""
    from bench.cost_model import usd

    found = []
    for members in model.sizes(CONSUMER):
        total = sum(model.push_month(CONSUMER, members, url).values())
        if total <= PUSH_TARGET_USD:
            found.append(f"{members:,} members {usd(total)} (meets it)")
            continue
        found.append(
            f"{members:,} members {usd(total)} (misses it by {usd(total - PUSH_TARGET_USD)}: "
            f"the group's timer checks, a per-group cost, come to "
            f"{usd(_checks_share(model, members))} of it per member)"
        )
    since = _target_from(model, url)
    fit = (
        "the per-member part alone misses it"
        if since is None
        else f"the target is met from about {since:.0f} members on"
    )
    return "; ".join(found) + f"; fitted over the sizes measured, {fit}"


def push_text(model: Model) -> str:
    """The verdict against the target, what dominates, and what each assumption adds."""
    from bench.cost_model import usd

    members = max(model.sizes(CONSUMER))
    url = FRONT_DOORS[FUNCTION_URL_DOOR]
    costs = model.push_month(CONSUMER, members, url)
    total = sum(costs.values())
    skips = model.push_skips(CONSUMER)
    renewing = model.push_month(CONSUMER, members, url, skips=0)
    more = model.push_month(CONSUMER, members, url, notices=PUSH_NOTICES_PER_MONTH + 1000)
    channel = sum(v for k, v in costs.items() if k.startswith(("WebSocket", "push:")))
    top = sorted(costs.items(), key=lambda kv: -kv[1])[:3]
    start, end = LOAD_AT_START[0], os.getloadavg()[0]
    return (
        f"**Push on (issue #47's target: at or under {usd(PUSH_TARGET_USD)} per member-month "
        f"behind a function URL):** consumer protocol, {_verdicts(model, url)}. "
        f"A connected member heartbeats every {PUSH_HEARTBEAT_S:g} s "
        f"({MONTH_S / PUSH_HEARTBEAT_S:,.0f} a month, plus {NOTICE_BEATS} per notice: at once "
        "and the second look a second later), sends a keepalive about every "
        f"{PUSH_KEEPALIVE_S / 60:g} min (one message; API Gateway answers it itself, no "
        "function runs) and reconnects every "
        f"{PUSH_RECONNECT_S / 3600:g} h; a ping (the push function's call, and its pong) "
        "goes only after a handshake that failed without a refusal, two on the next socket, "
        "priced as none; "
        f"{PUSH_NOTICES_PER_MONTH:,.0f} notices a month assumed (one an hour; 1,000 more add "
        f"{usd(sum(more.values()) - total)} at {members:,} members). Its session renewal is "
        f"skipped on {skips} heartbeats of every {skips + 1} (a connected member's slack may "
        f'reach the whole {SESSION_S[CONSUMER]:g} s session: docs/sessions.md, "Push"); were '
        "every heartbeat to renew, as before that rule, the member-month at "
        f"{members:,} members would be {usd(sum(renewing.values()))}. The channel itself costs "
        f"{usd(channel)} (connection-minutes {usd(costs['WebSocket connection-minutes'])}, "
        f"messages {usd(costs['WebSocket messages'])}, the push function's invocations and "
        f"units {usd(costs['push: Lambda'] + costs['push: DynamoDB'])}). The largest lines at "
        f"{members:,} members: "
        + ", ".join(f"{line} {usd(value)}" for line, value in top)
        + ". The Lambda duration lines bill the in-process times measured here (above), at a "
        f"load average (1 min) of {start:.1f} as the run started and {end:.1f} as it ended, "
        f"on {os.cpu_count()} cores: a busier machine bills more."
    )


def push_parts(model: Model) -> list[str]:
    """The cost model's push-on parts: none when the push channel was not measured."""
    if model.push is None:
        return []
    return [push_table(model), calls_table(model.push), push_text(model)]
