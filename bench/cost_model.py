"""Cost model: $ per member-month at a 5 s heartbeat on AWS, next to a Kinesis Client Library
style lease table (one conditional write per lease every ~3.3 s) for the same partitions, for
both front doors of template.yaml (FrontDoor): the HTTP API, which charges per request, and the
router's function URL, which charges nothing of its own (Lambda's request and duration charges
only). The same heartbeat runs behind either: only the front door's line differs.

    python -m bench.cost_model [--no-write]

Units per heartbeat come from bench/cost.py's audited figures (bench/.results/cost.json; the
script runs bench/cost.py for 10 and 1,000 members first if that file is missing or lacks the
rows used here). A steady heartbeat writes the member's session deadline only when it is less
than one session away (`groupcoord.session.renewal.skips`, core/session_renewal.py): of every
skips + 1 steady heartbeats one renews (reads and a conditional write) and the others only
read, so the model takes (skips x not due + due) / (skips + 1) of each figure, at the default
skips and at 0 (every heartbeat writes, Kafka's exact session timing).

On top of that, each group pays for its periodic expiry check (classic) or scan (consumer
protocol), which one heartbeat runs once per check interval and which reads every member: a
cost per group, not per member. The model spreads what one check adds (cost.py's "group timer
due" row minus its "renewal not due" row) over the heartbeats between two checks, and shows it
per group-month as well. The check comes at the group's earliest session deadline: about
session - interval after the last one with skips 0, about session - interval/2 with skips >= 1
(see check_interval_s).

The Lambda duration of a steady heartbeat is measured here, per protocol and for both kinds:
the in-process handler time (p50) against DynamoDB Local, an upper bound for AWS, where a
heartbeat waits for 2 or 3 DynamoDB round trips. The functions' architecture and memory size
are template.yaml's (Globals, parameter defaults).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from samtranslator.yaml_helper import yaml_parse

from bench.common import (
    TOPIC,
    Call,
    InProcess,
    build_classic_group_direct,
    build_consumer_group_direct,
    create_topic,
    dynamodb_local,
    load_results,
    make_consumer_group_timer_due,
    make_group_timer_due,
    percentile,
    table,
    write_section,
)
from bench.cost import (
    CLASSIC_TIMER,
    CONSUMER_HEARTBEAT,
    CONSUMER_TIMER,
    DUE,
    HEARTBEAT,
    NOT_DUE,
    RENEWAL_SKIPS,
    renewal_skips,
)
from groupcoord.core.session_renewal import effective_skips
from groupcoord.core.timer_checks import CLAIM_FROM_MEMBERS
from groupcoord.settings import Settings

COMMAND = "python -m bench.cost_model"
PRICES_AS_OF = "list prices as known in mid-2025 (DynamoDB after its Nov 2024 on-demand cut)"
# us-east-1 list prices in USD. They must be checked against the AWS pricing pages.
PRICES = {
    "API Gateway HTTP API, per request (first 300 M / month)": 1.00 / 1e6,
    # Function URLs have no price of their own: a request is billed as a Lambda invocation.
    "Lambda function URL, per request (beyond Lambda's own charges)": 0.0,
    "Lambda, per request": 0.20 / 1e6,
    "Lambda, per GB-second (arm64)": 0.0000133334,
    "Lambda, per GB-second (x86_64)": 0.0000166667,
    "DynamoDB on-demand, per write request unit": 0.625 / 1e6,
    "DynamoDB on-demand, per read request unit": 0.125 / 1e6,
}
API_GATEWAY = PRICES["API Gateway HTTP API, per request (first 300 M / month)"]
FUNCTION_URL = PRICES["Lambda function URL, per request (beyond Lambda's own charges)"]
# template.yaml's FrontDoor values -> (name in the tables, $ per request of the front door).
HTTP_API_DOOR, FUNCTION_URL_DOOR = "HTTP API", "function URL"
FRONT_DOORS = {HTTP_API_DOOR: API_GATEWAY, FUNCTION_URL_DOOR: FUNCTION_URL}
LAMBDA_REQUEST = PRICES["Lambda, per request"]
WRU = PRICES["DynamoDB on-demand, per write request unit"]
RRU = PRICES["DynamoDB on-demand, per read request unit"]
TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"
HEARTBEAT_S = 5.0
MONTH_S = 30 * 24 * 3600
KCL_RENEWAL_S = 10.0 / 3  # KCL: failoverTimeMillis 10 s, renewals every third of it
# (members, partitions) deployments to compare.
DEPLOYMENTS = ((10, 1_000), (100, 1_000), (1_000, 1_000), (1_000, 10_000), (5_000, 100_000))
FULL_VCPU_MB = 1769  # Lambda: a function gets one vCPU's worth of CPU at this memory size
TARGET_USD = 1.00  # issue #31's target: $ per member-month at a 5 s heartbeat (HTTP API)
HTTP_API_GOAL_USD = 0.80  # issue #32's goal for the HTTP API rows
FUNCTION_URL_TARGET_USD = 0.40  # issue #32's target for the function URL rows
# A verdict whose break-even billed duration is this close to the measured one is flagged: the
# in-process durations of this machine vary from run to run by about as much.
CLOSE_MS = 5.0
CLASSIC, CONSUMER = "classic", "consumer protocol"
STREAMS = "streams"  # bench/streams.py's rows, priced with this model's functions
# Per protocol: (steady heartbeat scenario, group timer scenario) of cost.py.
SCENARIOS = {CLASSIC: (HEARTBEAT, CLASSIC_TIMER), CONSUMER: (CONSUMER_HEARTBEAT, CONSUMER_TIMER)}
_DEFAULTS = Settings()
# Session and heartbeat interval. Classic: the client chooses both; the model takes the 5 s
# heartbeat with the Kafka consumer's default session.timeout.ms, 45 s (also groupcoord's
# client's default), and shows shorter sessions apart (SHORT_CLASSIC_SESSIONS_S, down to
# 3 intervals, the shortest Kafka's guidance allows). Consumer protocol: the broker's
# group.consumer.session.timeout.ms (45 s by default, also its minimum) and
# group.consumer.heartbeat.interval.ms (5 s).
KAFKA_SESSION_TIMEOUT_S = 45.0
SESSION_S = {
    CLASSIC: KAFKA_SESSION_TIMEOUT_S,
    CONSUMER: _DEFAULTS.group_consumer_session_timeout_ms / 1000,
    STREAMS: _DEFAULTS.group_streams_session_timeout_ms / 1000,
}
SHORT_CLASSIC_SESSIONS_S = (3 * HEARTBEAT_S, 6 * HEARTBEAT_S)
INTERVAL_S = {
    CLASSIC: HEARTBEAT_S,
    CONSUMER: _DEFAULTS.group_consumer_heartbeat_interval_ms / 1000,
    STREAMS: _DEFAULTS.group_streams_heartbeat_interval_ms / 1000,
}


def template_lambda() -> tuple[str, int]:
    """(architecture, memory MB) of the functions as template.yaml deploys them by default."""
    template = yaml_parse(TEMPLATE.read_text())
    function = template["Globals"]["Function"]
    (architecture,) = function["Architectures"]
    memory = function["MemorySize"]
    if isinstance(memory, dict):  # !Ref to a parameter: its default
        memory = template["Parameters"][memory["Ref"]]["Default"]
    return architecture, int(memory)


ARCHITECTURE, MEMORY_MB = template_lambda()
LAMBDA_GB_S = PRICES[f"Lambda, per GB-second ({ARCHITECTURE})"]
MEMORY_GB = MEMORY_MB / 1024
# Other Lambda settings, for the sensitivity table (the template's is marked).
ALTERNATIVES = (("x86_64", 512), ("arm64", 512), ("arm64", 256), ("arm64", 128))


def check_interval_s(protocol: str, skips: int, session_s: float | None = None) -> float:
    """Seconds between two of a steady group's timer checks. A check sets the group's next one
    (`dl`) to its earliest session deadline. With skips 0 each heartbeat writes last beat +
    session, so right after a check the earliest deadline lies about session - interval ahead
    (some member is about to heartbeat). With skips >= 1 a renewal writes now + session +
    (skips + 1/2) intervals and the member renews again at its first heartbeat that finds its
    deadline less than a session ahead, so a deadline lies between session - interval/2 and
    session + (skips + 1/2) intervals ahead: the earliest of many members whose renewals are
    spread over the cycle is about session - interval/2 ahead; members renewing in step
    (after a rebalance each renews on its first heartbeat) leave up to a session between
    checks. The model takes session - interval/2, the more frequent case. `session_s`: another
    session than the protocol's default."""
    session = SESSION_S[protocol] if session_s is None else session_s
    return session - INTERVAL_S[protocol] * (0.5 if skips else 1.0)


def rows_by_size(rows: list[dict[str, Any]], scenario: str) -> dict[int, dict[str, Any]]:
    """members -> cost.py's row of `scenario` (measured ones only)."""
    return {
        int(row["members"].replace(",", "")): row
        for row in rows
        if row["scenario"] == scenario and row["samples"]
    }


def heartbeat_units(rows: list[dict[str, Any]], scenario: str) -> dict[int, tuple[float, float]]:
    """members -> (read units, write units incl. GSI) per call, from cost.py's audit."""
    return {
        members: (row["audit_read"], row["audit_write"] + row["audit_index_write"])
        for members, row in rows_by_size(rows, scenario).items()
    }


def blended(
    not_due: dict[int, tuple[float, float]], due: dict[int, tuple[float, float]], skips: int
) -> dict[int, tuple[float, float]]:
    """members -> (read units, write units) of the average steady heartbeat at `skips`: of
    every skips + 1, `skips` find the renewal not due and one renews."""
    weight = skips / (skips + 1)
    return {
        members: (
            weight * not_due[members][0] + (1 - weight) * due[members][0],
            weight * not_due[members][1] + (1 - weight) * due[members][1],
        )
        for members in sorted(not_due)
        if members in due
    }


@dataclass(frozen=True)
class Check:
    """What one group timer check adds to the heartbeat that runs it: read and write units
    (incl. GSI) and handler seconds (in-process against DynamoDB Local)."""

    read: float
    write: float
    seconds: float


def check_month(
    check: Check, interval_s: float, gb_s_price: float = LAMBDA_GB_S, memory_gb: float = MEMORY_GB
) -> dict[str, float]:
    """$ per group-month of a group's timer checks, one every `interval_s`: what each adds to
    its heartbeat (units, and handler time billed as Lambda duration)."""
    per_month = MONTH_S / interval_s
    return {
        "Lambda duration": per_month * check.seconds * memory_gb * gb_s_price,
        "DynamoDB writes": per_month * check.write * WRU,
        "DynamoDB reads": per_month * check.read * RRU,
    }


def timer_checks(rows: list[dict[str, Any]], protocol: str) -> dict[int, Check]:
    """members -> what a check adds: cost.py's timer row minus its "renewal not due" row (the
    timer samples are heartbeats whose renewal was not due)."""
    steady, timer = SCENARIOS[protocol]
    quiet = rows_by_size(rows, steady + NOT_DUE)
    found = {}
    for members, row in rows_by_size(rows, timer).items():
        if members not in quiet:
            continue
        base = quiet[members]
        found[members] = Check(
            read=row["audit_read"] - base["audit_read"],
            write=(row["audit_write"] + row["audit_index_write"])
            - (base["audit_write"] + base["audit_index_write"]),
            seconds=max(0.0, row["seconds"] - base["seconds"]),
        )
    return found


@dataclass(frozen=True)
class SteadyTimes:
    """p50 in-process times (ms) of a steady heartbeat: handler time when the renewal is not
    due and when it is, and this process's CPU time in it (the handler and botocore)."""

    quiet_ms: float
    renewing_ms: float
    cpu_ms: float

    def billed_ms(self, skips: int) -> float:
        """The billed duration of the average steady heartbeat at `skips`: of every skips + 1,
        `skips` only read and one renews."""
        return (skips * self.quiet_ms + self.renewing_ms) / (skips + 1)


def measure_duration_ms(
    check_sizes: list[int], samples: int = 100, check_samples: int = 15
) -> tuple[dict[str, SteadyTimes], dict[str, dict[int, float]]]:
    """In-process handler times against DynamoDB Local, without the capacity audit (whose own
    reads are no part of a call), per protocol:

    - p50 of a steady heartbeat in a 10-member group built directly (SteadyTimes): renewal
      not due, renewal due, and its CPU time. Due: skips 0, where every heartbeat renews;
      not due: the default skips (at least 1), each member having renewed once first. Each
      call is classed by whether it wrote (a slow run may let a renewal fall due).
    - per group size of `check_sizes`: what a group timer check adds to the heartbeat that
      runs it, the p50 of heartbeats that found the check forced due less the p50 of the
      heartbeats whose renewal was not due."""
    steady: dict[str, SteadyTimes] = {}
    checks: dict[str, dict[int, float]] = {CLASSIC: {}, CONSUMER: {}}
    with dynamodb_local() as endpoint:
        coordinator = InProcess(endpoint)
        create_topic(coordinator, TOPIC, 1000)
        for size in sorted({10, *check_sizes}):
            # Each group is measured right after it is built: a member that joined through
            # the protocol has the default session, which a long wait would let run out.
            for protocol in (CLASSIC, CONSUMER):
                beat, ids, make_due = built_group(coordinator, protocol, size)
                if size == 10:
                    steady[protocol] = steady_ms(coordinator, protocol, beat, ids, samples)
                if size in check_sizes:
                    checks[protocol][size] = check_ms(
                        coordinator, beat, ids[0], make_due, check_samples
                    )
    return steady, checks


def built_group(
    coordinator: InProcess, protocol: str, size: int
) -> tuple[Callable[[str], Call], list[str], Callable[[], None]]:
    """A Stable group of `size` members built directly: its heartbeat, its member ids and how
    to force its timer check due."""
    group_id = f"model-{uuid.uuid4().hex[:8]}"
    if protocol == CLASSIC:
        ids = build_classic_group_direct(coordinator, group_id, size)

        def classic_beat(member_id: str) -> Call:
            body = {"groupId": group_id, "generationId": 1, "memberId": member_id}
            return coordinator.call("heartbeat", body)

        return classic_beat, ids, lambda: make_group_timer_due(coordinator, group_id)
    sim, _ = build_consumer_group_direct(coordinator, group_id, size)
    return sim.beat, sim.ids, lambda: make_consumer_group_timer_due(coordinator, group_id)


def steady_ms(
    coordinator: InProcess, protocol: str, beat: Callable[[str], Call], ids: list[str], n: int
) -> SteadyTimes:
    with renewal_skips(coordinator, 0):
        due = [beat(ids[i % len(ids)]) for i in range(n)]
    with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
        for member_id in ids[:10]:
            beat(member_id)  # renews: the next heartbeats find it a session ahead
        quiet = [beat(ids[i % 10]) for i in range(n)]
    calls = due[5:] + quiet  # the first calls warm the handler up
    for answer in calls:
        assert answer.status == 200 and answer.error_code == 0, answer.body
    kinds = (
        [a.seconds * 1000 for a in calls if not a.usage.write_units],
        [a.seconds * 1000 for a in calls if a.usage.write_units],
    )
    assert all(len(k) >= n // 4 for k in kinds), f"{protocol}: too few of a kind"
    return SteadyTimes(
        quiet_ms=percentile(kinds[0], 50),
        renewing_ms=percentile(kinds[1], 50),
        cpu_ms=percentile([a.cpu_seconds * 1000 for a in calls], 50),
    )


def check_calls(
    coordinator: InProcess,
    beat: Callable[[str], Call],
    member_id: str,
    make_due: Callable[[], None],
    n: int,
) -> tuple[list[Call], list[Call]]:
    """`n` heartbeats that only read and `n` that found the group's timer check forced due
    (quiet, checked): the heartbeats are of a member that renewed just before, so that only
    the check writes."""
    with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
        quiet, checked = [], []
        for _ in range(n):
            beat(member_id)  # renews if due: the next two beats only read
            quiet.append(beat(member_id))
            make_due()
            checked.append(beat(member_id))
    for answer in quiet + checked:
        assert answer.status == 200 and answer.error_code == 0, answer.body
    assert all(a.usage.write_units for a in checked), "a forced-due check wrote nothing"
    return quiet, checked


def check_ms(
    coordinator: InProcess,
    beat: Callable[[str], Call],
    member_id: str,
    make_due: Callable[[], None],
    n: int,
) -> float:
    """What a forced-due timer check adds to a heartbeat (ms, p50 less the quiet p50)."""
    quiet, checked = check_calls(coordinator, beat, member_id, make_due, n)
    quiet_ms = percentile([a.seconds * 1000 for a in quiet], 50)
    return max(0.0, percentile([a.seconds * 1000 for a in checked], 50) - quiet_ms)


def per_heartbeat(
    read_units: float,
    write_units: float,
    duration_ms: float,
    gb_s_price: float = LAMBDA_GB_S,
    memory_gb: float = MEMORY_GB,
    front_door: float = API_GATEWAY,
) -> dict[str, float]:
    return {
        "front door": front_door,
        "Lambda requests": LAMBDA_REQUEST,
        "Lambda duration": duration_ms / 1000 * memory_gb * gb_s_price,
        "DynamoDB writes": write_units * WRU,
        "DynamoDB reads": read_units * RRU,
    }


def front_door_verdict(
    by_door: dict[tuple[str, int, int, str], float],
    sizes: dict[str, list[int]],
    skips_shown: tuple[int, ...],
) -> str:
    """Issue #32's targets, per front door and measured size, at the default skips."""
    parts = []
    for door, target in (
        (FUNCTION_URL_DOOR, FUNCTION_URL_TARGET_USD),
        (HTTP_API_DOOR, HTTP_API_GOAL_USD),
    ):
        figures = []
        for protocol in SCENARIOS:
            for members in sizes[protocol]:
                cost = by_door[protocol, members, RENEWAL_SKIPS, door]
                verdict = "meets" if cost <= target else f"misses by ${cost - target:.4f}"
                figures.append(f"{protocol}, {members:,} members ${cost:.4f} ({verdict})")
        parts.append(f"behind the {door}, at or under ${target:.2f}: " + "; ".join(figures))
    exact = ""
    if 0 in skips_shown and RENEWAL_SKIPS:
        worst = max(v for (_, _, k, d), v in by_door.items() if k == 0 and d == FUNCTION_URL_DOOR)
        exact = (
            f" At skips 0 (Kafka's exact session timing) the function URL rows cost up to "
            f"${worst:.4f}."
        )
    return (
        "**Front doors (issue #32)**, per member-month at a 5 s heartbeat with the template's "
        f"Lambda and the default skips ({RENEWAL_SKIPS}), timer checks included: "
        + "; ".join(parts)
        + ". The heartbeat is the same behind either (the router runs the handlers the API "
        "functions run, on the same layer); only the front door's charge differs: "
        f"${API_GATEWAY * 1e6:.2f} per million requests for the HTTP API, none of its own for "
        "a function URL (its requests are Lambda invocations, billed as Lambda requests and "
        "duration either way)." + exact
    )


def usd(value: float) -> str:
    if value >= 100:
        return f"${value:,.0f}"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def num(value: float) -> str:
    """A unit count to at most 2 decimals."""
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def has_needed_rows(rows: list[dict[str, Any]] | None) -> bool:
    """Whether cost.json measures steady heartbeats both ways (renewal due and not due) and
    both protocols' group timer checks at the same sizes, with handler times."""
    if rows is None or any("seconds" not in row for row in rows):
        return False
    for steady, timer in SCENARIOS.values():
        sizes = [set(heartbeat_units(rows, steady + kind)) for kind in (NOT_DUE, DUE)]
        if not sizes[0] or sizes[0] != sizes[1] or not sizes[0] <= set(rows_by_size(rows, timer)):
            return False
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = load_results("cost")
    source = "bench/.results/cost.json, written by `python -m bench.cost`"
    if not has_needed_rows(rows):
        from bench import cost

        cost.main(["--sizes", "10,1000", "--no-write"])
        rows = load_results("cost")
        source = "`python -m bench.cost --sizes 10,1000`, run by this script"
    assert rows is not None and has_needed_rows(rows), "cost.json lacks the rows needed"
    measured = {
        protocol: (heartbeat_units(rows, steady + NOT_DUE), heartbeat_units(rows, steady + DUE))
        for protocol, (steady, _) in SCENARIOS.items()
    }
    checks = {protocol: timer_checks(rows, protocol) for protocol in SCENARIOS}
    check_sizes = sorted({m for protocol in SCENARIOS for m in checks[protocol]})
    durations, check_ms = measure_duration_ms(check_sizes)
    checks = {  # units from cost.py's audit, handler time measured here without it
        protocol: {m: replace(c, seconds=check_ms[protocol][m] / 1000) for m, c in found.items()}
        for protocol, found in checks.items()
    }
    beats_per_month = MONTH_S / HEARTBEAT_S
    current = (ARCHITECTURE, MEMORY_MB)
    skips_shown = (RENEWAL_SKIPS, 0) if RENEWAL_SKIPS else (0,)
    sizes = {
        p: sorted(set(measured[p][0]) & set(measured[p][1]) & set(checks[p])) for p in SCENARIOS
    }

    def duration_ms(protocol: str, skips: int) -> float:
        """The billed duration of the average steady heartbeat at `skips`."""
        return durations[protocol].billed_ms(skips)

    def timer_month(
        protocol: str,
        members: int,
        skips: int,
        gb_s_price: float = LAMBDA_GB_S,
        memory_gb: float = MEMORY_GB,
        session_s: float | None = None,
    ) -> dict[str, float]:
        """$ per group-month of the group's timer checks: what each adds to its heartbeat
        (units, and handler time billed as Lambda duration), once per check interval."""
        interval_s = check_interval_s(protocol, skips, session_s)
        return check_month(checks[protocol][members], interval_s, gb_s_price, memory_gb)

    def units(protocol: str, members: int, skips: int) -> tuple[float, float]:
        """(read, write) units of the average heartbeat, the group's timer checks included:
        one check's units spread over the heartbeats between two checks."""
        read, write = blended(*measured[protocol], skips)[members]
        check = checks[protocol][members]
        between = members * check_interval_s(protocol, skips) / HEARTBEAT_S
        return read + check.read / between, write + check.write / between

    def steady_month(
        protocol: str, members: int, skips: int, gb_s_price: float, memory_gb: float
    ) -> dict[str, float]:
        """$ per member-month of steady heartbeats alone (no timer checks)."""
        read, write = blended(*measured[protocol], skips)[members]
        parts = per_heartbeat(read, write, duration_ms(protocol, skips), gb_s_price, memory_gb)
        return {k: v * beats_per_month for k, v in parts.items()}

    def month(
        protocol: str,
        members: int,
        skips: int,
        gb_s_price: float = LAMBDA_GB_S,
        memory_gb: float = MEMORY_GB,
        session_s: float | None = None,
    ) -> dict[str, float]:
        """$ per member-month: steady heartbeats plus the member's share of the timer checks."""
        costs = steady_month(protocol, members, skips, gb_s_price, memory_gb)
        timers = timer_month(protocol, members, skips, gb_s_price, memory_gb, session_s)
        for k, v in timers.items():
            costs[k] += v / members
        return costs

    model_rows = []
    # (protocol, members, skips): $ per member-month behind the HTTP API; `by_door` adds the
    # front door as a fourth key (the heartbeat is the same, only the front door's line differs).
    total: dict[tuple[str, int, int], float] = {}
    by_door: dict[tuple[str, int, int, str], float] = {}
    timer_share: dict[tuple[str, int, int], float] = {}
    for protocol in SCENARIOS:
        for members in sizes[protocol]:
            for skips in skips_shown:
                costs = month(protocol, members, skips)
                total[protocol, members, skips] = sum(costs.values())
                share = sum(timer_month(protocol, members, skips).values()) / members
                timer_share[protocol, members, skips] = share
                read, write = units(protocol, members, skips)
                default = " (default)" if skips == RENEWAL_SKIPS else ""
                for door, price in FRONT_DOORS.items():
                    behind = {**costs, "front door": price * beats_per_month}
                    by_door[protocol, members, skips, door] = sum(behind.values())
                    model_rows.append(
                        (
                            f"{protocol}, {members:,} members, {door}",
                            f"{skips}{default}",
                            f"{read:.3f}",
                            f"{write:.3f}",
                            *(usd(v) for v in behind.values()),
                            f"**{usd(sum(behind.values()))}**",
                            usd(share),
                        )
                    )
    model_table = table(
        (
            "per member-month",
            "session.renewal.skips",
            "RCU / heartbeat",
            "WCU / heartbeat",
            "front door (API Gateway / function URL)",
            "Lambda requests",
            "Lambda duration",
            "DynamoDB writes",
            "DynamoDB reads",
            "total",
            "of which group timer checks",
        ),
        model_rows,
    )
    timer_rows = []
    for protocol in SCENARIOS:
        for members in sizes[protocol]:
            check = checks[protocol][members]
            for skips in skips_shown:
                parts = timer_month(protocol, members, skips)
                interval = check_interval_s(protocol, skips)
                timer_rows.append(
                    (
                        f"{protocol}, {members:,} members",
                        f"{skips}{' (default)' if skips == RENEWAL_SKIPS else ''}",
                        f"{interval:g} s (session {SESSION_S[protocol]:g} s)",
                        f"{MONTH_S / interval:,.0f}",
                        f"{num(check.read)} / {num(check.write)} / {check.seconds * 1000:.0f}",
                        usd(parts["DynamoDB reads"] + parts["DynamoDB writes"]),
                        usd(parts["Lambda duration"]),
                        f"**{usd(sum(parts.values()))}**",
                        usd(sum(parts.values()) / members),
                    )
                )
    timer_table = table(
        (
            "group timer checks, per group-month",
            "session.renewal.skips",
            "check every",
            "checks / month",
            "one check adds: RCU / WCU / ms in-process (DynamoDB Local)",
            "DynamoDB",
            "Lambda duration",
            "total per group-month",
            "per member-month",
        ),
        timer_rows,
    )
    # Classic members with shorter sessions than the default: checks come more often.
    short_rows = []
    for session_s in SHORT_CLASSIC_SESSIONS_S:
        # The slack is at most a third of the session: a short one skips fewer heartbeats.
        skips = effective_skips(
            int(INTERVAL_S[CLASSIC] * 1000), RENEWAL_SKIPS, int(session_s * 1000)
        )
        interval = check_interval_s(CLASSIC, skips, session_s)
        for members in sizes[CLASSIC]:
            group_month = sum(timer_month(CLASSIC, members, skips, session_s=session_s).values())
            cost = sum(month(CLASSIC, members, skips, session_s=session_s).values())
            short_rows.append(
                (
                    f"classic, {members:,} members",
                    f"{session_s:g} s",
                    f"{skips}",
                    f"{interval:g} s",
                    usd(group_month),
                    f"**{usd(cost)}**",
                    "meets" if cost <= TARGET_USD else f"misses by {usd(cost - TARGET_USD)}",
                )
            )
    short_table = table(
        (
            f"shorter classic sessions, skips setting {RENEWAL_SKIPS}",
            "session",
            "heartbeats skipped (a third of the session at most)",
            "check every",
            "timer checks per group-month",
            "total per member-month",
            f"${TARGET_USD:.2f} target",
        ),
        short_rows,
    )
    lease_month = MONTH_S / KCL_RENEWAL_S * WRU  # one 1-WRU conditional write per renewal
    classic_sizes = sizes[CLASSIC]

    def member_month(members: int) -> float:
        """The classic per-member figure (default skips) of the measured group size closest
        to `members`."""
        closest = min(classic_sizes, key=lambda n: abs(n - members))
        return total[CLASSIC, closest, RENEWAL_SKIPS]

    compare = table(
        ("members", "partitions", "groupcoord / month", "KCL lease renewals / month", "ratio"),
        [
            (
                f"{m:,}",
                f"{p:,}",
                usd(m * member_month(m)),
                usd(p * lease_month),
                f"{(m * member_month(m)) / (p * lease_month):.2f}",
            )
            for m, p in DEPLOYMENTS
        ],
    )
    price_table = table(
        ("us-east-1 list price", "USD"),
        [
            (
                f"{name}, the template's (used here)" if ARCHITECTURE in name else name,
                f"{value:.10f}".rstrip("0") if "GB" in name else f"{value * 1e6:.3f} per million",
            )
            for name, value in PRICES.items()
        ],
    )
    # The same consumer-protocol heartbeat (the size measured closest to 1,000 members) under
    # other Lambda settings, at the default skips and at 0.
    size = min(sizes[CONSUMER], key=lambda n: abs(n - 1000))
    settings = list(dict.fromkeys((*ALTERNATIVES, current)))
    by_setting = {
        (arch, mb, skips): month(
            CONSUMER, size, skips, PRICES[f"Lambda, per GB-second ({arch})"], mb / 1024
        )
        for arch, mb in settings
        for skips in skips_shown
    }
    no_duration = {
        skips: sum(v for k, v in by_setting[(*current, skips)].items() if k != "Lambda duration")
        for skips in skips_shown
    }
    alternatives = table(
        (
            "Lambda",
            "Lambda duration / member-month",
            f"total / member-month, skips {RENEWAL_SKIPS}",
            *(["total / member-month, skips 0"] if RENEWAL_SKIPS else []),
        ),
        [
            (
                f"{arch}, {mb} MB" + (" (template.yaml)" if (arch, mb) == current else ""),
                usd(by_setting[arch, mb, RENEWAL_SKIPS]["Lambda duration"]),
                *(usd(sum(by_setting[arch, mb, skips].values())) for skips in skips_shown),
            )
            for arch, mb in settings
        ],
    )
    totals = {(a, mb): sum(by_setting[a, mb, RENEWAL_SKIPS].values()) for a, mb in settings}
    under = [f"{a} {mb} MB" for (a, mb), v in totals.items() if v <= TARGET_USD]
    over = [f"{a} {mb} MB (${v:.3f})" for (a, mb), v in totals.items() if v > TARGET_USD]
    if no_duration[RENEWAL_SKIPS] > TARGET_USD:
        reach = "so no architecture or memory size brings it to $1.00."
    elif under:
        reach = "and the total is at or under $1.00 with " + ", ".join(under)
        reach += f", over it with {', '.join(over)}." if over else "."
    else:
        reach = "so only a shorter billed duration brings it to $1.00."
    slack_s = (RENEWAL_SKIPS + 0.5) * HEARTBEAT_S

    # The target, per protocol and measured size, at the defaults (template Lambda, skips).
    verdicts = []
    for protocol in SCENARIOS:
        met = [m for m in sizes[protocol] if total[protocol, m, RENEWAL_SKIPS] <= TARGET_USD]
        missed = [m for m in sizes[protocol] if m not in met]
        figures = ", ".join(
            f"{m:,} members ${total[protocol, m, RENEWAL_SKIPS]:.4f}"
            + (
                f", over by ${total[protocol, m, RENEWAL_SKIPS] - TARGET_USD:.4f}"
                if m in missed
                else ""
            )
            for m in sizes[protocol]
        )
        if not missed:
            verdict = "meets it at every size measured"
        elif not met:
            verdict = "**misses it at every size measured**"
        else:
            verdict = (
                f"meets it at {', '.join(f'{m:,}' for m in met)} members and **misses it at "
                f"{', '.join(f'{m:,}' for m in missed)} members**"
            )
        verdicts.append(f"the {protocol} {verdict} ({figures})")
    target = (
        f"**Target: at or under ${TARGET_USD:.2f} per member-month at a 5 s heartbeat** with the "
        f"template's Lambda ({ARCHITECTURE}, {MEMORY_MB} MB) and the default "
        f"`groupcoord.session.renewal.skips` ({RENEWAL_SKIPS}), timer checks included: "
        + "; ".join(verdicts)
        + ". At skips 0: "
        + "; ".join(
            f"{p}, {m:,} members ${total[p, m, 0]:.4f}"
            + (" (misses)" if total[p, m, 0] > TARGET_USD else "")
            for p in SCENARIOS
            for m in sizes[p]
        )
        + "."
    )
    # Per member and per group: what a member pays at any size, and what the group's checks
    # add, divided among its members; the size from which the target is met, with the checks'
    # cost per group taken as linear in the members (fitted on the sizes measured).
    scaling = []
    for protocol in SCENARIOS:
        measured_sizes = sizes[protocol]
        per_member = {
            m: sum(steady_month(protocol, m, RENEWAL_SKIPS, LAMBDA_GB_S, MEMORY_GB).values())
            for m in measured_sizes
        }
        group = {m: sum(timer_month(protocol, m, RENEWAL_SKIPS).values()) for m in measured_sizes}
        steady_figures = {usd(v) for v in per_member.values()}
        text = (
            f"{protocol}: "
            + (
                f"{steady_figures.pop()} per member-month for the steady heartbeats, the same at "
                "every size"
                if len(steady_figures) == 1
                else ", ".join(f"{usd(per_member[m])} at {m:,} members" for m in measured_sizes)
                + " per member-month for the steady heartbeats"
            )
            + ", plus the timer checks at "
            + ", ".join(
                f"{m:,} members {usd(group[m])} per group-month = {usd(group[m] / m)} per member"
                for m in measured_sizes
            )
        )
        if len(measured_sizes) >= 2:
            small, large = measured_sizes[0], measured_sizes[-1]
            slope = (group[large] - group[small]) / (large - small)
            fixed = group[small] - slope * small
            steady = per_member[large]
            room = TARGET_USD - steady - slope
            if steady + slope > TARGET_USD:
                text += f"; the per-member part alone (${steady + slope:.4f}) is over the target"
            elif fixed <= 0:
                text += "; the fixed part of the checks is none: the target holds at any size"
            else:
                text += (
                    f"; fitted as {usd(fixed)} + {usd(slope)} per member per group-month, "
                    f"the target is met from about {fixed / room:,.0f} members on (an "
                    "estimate from the sizes measured at this run's durations, not a "
                    "measurement)"
                )
        scaling.append(text + ".")
    per_group = (
        "What scales per member and what is per group, at the default skips: "
        + " ".join(scaling)
        + " A small group pays more per member because its checks (a few writes each, and a "
        "read of every member) are shared by fewer members."
    )
    # The average billed duration at which each default row costs $1.00 (none when it costs
    # more than that without any steady duration charge).
    ms_price = beats_per_month * MEMORY_GB * LAMBDA_GB_S / 1000
    break_even, close = [], []
    for p in SCENARIOS:
        for m in sizes[p]:
            costs = month(p, m, RENEWAL_SKIPS)
            steady_duration = steady_month(p, m, RENEWAL_SKIPS, LAMBDA_GB_S, MEMORY_GB)[
                "Lambda duration"
            ]
            rest = sum(costs.values()) - steady_duration
            reach_ms = (TARGET_USD - rest) / ms_price
            if abs(reach_ms - duration_ms(p, RENEWAL_SKIPS)) < CLOSE_MS:
                close.append(f"{p}, {m:,} members")
            break_even.append(
                f"{p}, {m:,} members: {reach_ms:.1f} ms (measured "
                f"{duration_ms(p, RENEWAL_SKIPS):.1f})"
                if reach_ms > 0
                else f"{p}, {m:,} members: none (${rest:.4f} without it)"
            )
    target += (
        " The average billed duration of a steady heartbeat at which each costs $1.00: "
        + "; ".join(break_even)
        + "."
    )
    if close:
        target += (
            f" Within {CLOSE_MS:g} ms of it, so on either side of the target from one run to "
            "the next on this shared machine (the measured durations vary by more than that): "
            + "; ".join(close)
            + "."
        )
    if RENEWAL_SKIPS:
        extra = sorted(
            total[p, m, 0] - total[p, m, RENEWAL_SKIPS]
            for p, m, k in total
            if k == 0 and (p, m, RENEWAL_SKIPS) in total
        )
        low, high = usd(extra[0]), usd(extra[-1])
        spread = low if low == high else f"{low} to {high}"
        exact, skipping = (by_setting[(*current, k)] for k in (0, RENEWAL_SKIPS))
        more = {k: exact[k] - skipping[k] for k in exact}
        # RCU of a heartbeat, renewal not due and due, in the largest group measured.
        reads = {p: tuple(max(kind.items())[1][0] for kind in measured[p]) for p in measured}
        same = all(abs(quiet - due) < 0.01 for quiet, due in reads.values())
        how = {
            p: " (the group item eventually consistent, the member item consistent)"
            if abs(reads[p][0] - 1.5) < 0.01
            else ""
            for p in reads
        }
        renewal = (
            f"Session renewal: `groupcoord.session.renewal.skips` is {RENEWAL_SKIPS} by default "
            "(0 to 4). A steady heartbeat writes the member's session deadline (one conditional "
            "write, 1 WCU) only when it is less than one session away, and a renewal sets it "
            "(skips + 1/2) heartbeat intervals past one session (at most a third of the "
            "session: a short session skips fewer), so at a 45 s session 1 of every "
            f"{RENEWAL_SKIPS + 1} steady heartbeats writes and the others only read: the WCU "
            "column is the mean over them. Reads, "
            + ("the same either way: " if same else "when the renewal is not due: ")
            + f"{reads[CLASSIC][0]:g} RCU for a classic heartbeat{how[CLASSIC]}, "
            f"{reads[CONSUMER][0]:g} for a consumer-protocol one{how[CONSUMER]}. The price: a "
            "member that goes silent is removed between one session timeout and (skips + 1/2) "
            f"heartbeat intervals later (up to {slack_s:g} s after a 45 s session at a "
            f"{HEARTBEAT_S:.0f} s heartbeat, never more than a third of the session), where "
            "Kafka removes it at one session timeout exactly. Skips 0 restores the exact "
            "timing and writes on every heartbeat (the rows "
            f"marked 0 above): {spread} more per member-month; for the consumer protocol at "
            f"{size:,} members {usd(sum(exact.values()))} instead of "
            f"{usd(sum(skipping.values()))}, of which {usd(more['DynamoDB writes'])} DynamoDB "
            f"writes and {usd(more['Lambda duration'])} Lambda duration (the longer billed "
            "duration measured for a heartbeat that writes, and checks that come more often)."
        )
    else:
        renewal = (
            "Session renewal: `groupcoord.session.renewal.skips` is 0 by default here: every "
            "heartbeat writes the member's session deadline (Kafka's exact timing)."
        )
    elapsed = time.perf_counter() - started
    intervals = "; ".join(
        f"{p}: session {SESSION_S[p]:g} s, a check every {check_interval_s(p, 0):g} s at skips "
        f"0 and {check_interval_s(p, max(1, RENEWAL_SKIPS)):g} s at skips >= 1"
        for p in SCENARIOS
    )
    notes = [
        f"Heartbeat every {HEARTBEAT_S:.0f} s ({beats_per_month:,.0f} per member per 30-day "
        f"month). Sessions: {SESSION_S[CLASSIC]:g} s for classic members (the Kafka "
        "consumer's default `session.timeout.ms`, and groupcoord's client's, which sends its "
        "heartbeat interval as `heartbeatFrequency` and `failedHeartbeatThreshold`: 9 here; "
        f"shorter sessions in the table below), {SESSION_S[CONSUMER]:g} s for the consumer "
        "protocol "
        "(`group.consumer.session.timeout.ms`, its default and its minimum); the session only "
        "sets how often the timer checks come. Lambda as template.yaml deploys it: "
        f"{ARCHITECTURE}, {MEMORY_MB} MB, billed per steady heartbeat the p50 measured "
        "in-process against DynamoDB Local in a 10-member group: "
        + "; ".join(
            f"{p} {durations[p].renewing_ms:.1f} ms when it renews the session, "
            f"{durations[p].quiet_ms:.1f} ms "
            f"when it only reads ({duration_ms(p, RENEWAL_SKIPS):.1f} ms on average at skips "
            f"{RENEWAL_SKIPS})"
            for p in SCENARIOS
        )
        + ". Of that, this process's CPU time (the handler and botocore; the rest is waiting "
        "for DynamoDB Local, a separate process): "
        + "; ".join(f"{p} {durations[p].cpu_ms:.1f} ms" for p in SCENARIOS)
        + ". On AWS each DynamoDB round trip takes a few ms, less than DynamoDB Local's here, but "
        f"Lambda gives a function CPU in proportion to its memory ({MEMORY_MB} MB is about "
        f"{MEMORY_MB / FULL_VCPU_MB:.2f} of a vCPU), so the CPU part takes longer there: the "
        "measured time is an estimate, not a bound either way. On this shared 2-core machine "
        "it varies from run to run.",
        target,
        front_door_verdict(by_door, sizes, skips_shown),
        per_group,
        "Group timer checks: a group's expiry check (classic) or scan (consumer protocol) runs "
        "in one heartbeat when the group's next check (`dl`, its earliest session deadline) has "
        "passed: it reads every member and writes the next one (from "
        f"{CLAIM_FROM_MEMBERS} members on it first claims the check, core/timer_checks.py). "
        'What one check adds in units is cost.py\'s "group timer due" row minus its "renewal '
        'not due" row, measured at every size by forcing the check due; its added handler time '
        "(in-process against DynamoDB Local, measured here without the audit: the p50 of "
        "heartbeats that found the check forced due less that of heartbeats that only read) is "
        "billed as "
        "Lambda duration. "
        f"Check intervals: {intervals}. With skips 0 a deadline is the member's last "
        "heartbeat + session, so the earliest lies session - interval ahead after a check. "
        "With skips >= 1 a renewal writes now + session + (skips + 1/2) intervals and the next "
        "renewal comes at the first heartbeat that finds the deadline less than a session "
        "ahead, so right after a check every deadline lies at least session - interval/2 "
        "ahead (not a whole session: up to half an interval before its renewal a member's "
        "deadline is that close), and with many members renewing at spread-out times the "
        "earliest is about that; members renewing in step (each renews on its first "
        "heartbeat after a rebalance) push checks up to a session apart, so the model, taking "
        "session - interval/2, may overstate them by up to "
        f"{SESSION_S[CLASSIC] / check_interval_s(CLASSIC, 1) - 1:.0%} (classic) and "
        f"{SESSION_S[CONSUMER] / check_interval_s(CONSUMER, 1) - 1:.0%} (consumer protocol). "
        "In the per member-month table the checks are spread over the N x interval / "
        "heartbeat heartbeats between two checks.",
        renewal,
        f"Other Lambda settings (consumer protocol, {size:,} members) at the same billed duration: "
        f"without any duration charge the heartbeat costs {usd(no_duration[RENEWAL_SKIPS])} per "
        f"member-month at skips {RENEWAL_SKIPS} (API Gateway, Lambda requests and DynamoDB), "
        f"{reach} The table assumes the duration does not change with memory; Lambda gives "
        "CPU in proportion to memory, so at less memory the CPU-bound part of a call takes "
        "longer and costs the same GB-seconds: only its wait on DynamoDB gets cheaper.",
        f"Units per heartbeat: the audited figures of {source}: a steady heartbeat whose "
        "renewal is not due and one whose renewal is due, weighted (skips x not due + due) / "
        "(skips + 1), plus the group's timer checks spread over its heartbeats (above).",
        f"KCL lease table: one conditional UpdateItem (1 WRU, lease items < 1 KB) per lease every "
        f"{KCL_RENEWAL_S:.1f} s = {usd(lease_month)} per lease-month; KCL runs in the consumers, "
        "so there is no API Gateway or Lambda, and its periodic lease-table scans and "
        "checkpoints are left out (as are groupcoord's offset commits).",
        "groupcoord side of the comparison: the classic per member-month figure (default skips, "
        "timer checks included) of the measured group size closest to the deployment's. "
        "groupcoord costs per member, KCL per partition: groupcoord is the cheaper the more "
        "partitions each member owns.",
        f"Prices: {PRICES_AS_OF}, from memory of the AWS pricing pages, not fetched: check "
        "them before quoting. Free tiers are ignored.",
    ]
    parts = (price_table, model_table, timer_table, short_table, compare, alternatives, *notes)
    for part in (*parts, f"took {elapsed:.0f}s"):
        print(part, end="\n\n")
    if not args.no_write:
        body = "\n\n".join([*parts, f"The run took {elapsed:.0f} s."])
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        section = "Cost model: $ per member-month"
        print(f"wrote {write_section('cost_model', section, command, body)}")


if __name__ == "__main__":
    main()
