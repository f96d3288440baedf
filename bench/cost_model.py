"""Cost model: $ per member-month at a 5 s heartbeat on AWS, next to a Kinesis Client Library
style lease table (one conditional write per lease every ~3.3 s) for the same partitions, for
both front doors of template.yaml (FrontDoor): the HTTP API, which charges per request, and the
router's function URL, which charges nothing of its own (Lambda's request and duration charges
only). The same heartbeat runs behind either: only the front door's line differs.

    python -m bench.cost_model [--no-write] [--smoke]

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

The prices and the arithmetic are bench/pricing.py's (pure); this runner measures, prices
and prints. `--smoke`: a tiny run (a 10-member bench.cost of its own, a few samples) that
checks the whole path, leaving the docs and bench/.results alone.

With push on (docs/sessions.md, "Push"; bench/cost_push.py): a consumer-protocol member's
month at the push channel's 15 s heartbeat, behind either front door, with the WebSocket API's
connection-minutes and messages and the push function's calls (measured here too).

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
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
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
from bench.cost_push import measure_push_calls, push_parts
from bench.pricing import (
    API_GATEWAY,
    CLASSIC,
    CONSUMER,
    FRONT_DOORS,
    FULL_VCPU_MB,
    FUNCTION_URL_DOOR,
    HEARTBEAT_S,
    HTTP_API_DOOR,
    INTERVAL_S,
    KCL_RENEWAL_S,
    MONTH_S,
    PRICES,
    PRICES_AS_OF,
    SESSION_S,
    SHORT_CLASSIC_SESSIONS_S,
    TARGET_USD,
    Check,
    GroupFit,
    LambdaSetting,
    Model,
    SteadyTimes,
    Units,
    check_interval_s,
    kcl_lease_month,
)
from groupcoord.core.session_renewal import effective_skips
from groupcoord.core.timer_checks import CLAIM_FROM_MEMBERS

COMMAND = "python -m bench.cost_model"
TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"
# (members, partitions) deployments to compare.
DEPLOYMENTS = ((10, 1_000), (100, 1_000), (1_000, 1_000), (1_000, 10_000), (5_000, 100_000))
HTTP_API_GOAL_USD = 0.80  # issue #32's goal for the HTTP API rows
FUNCTION_URL_TARGET_USD = 0.40  # issue #32's target for the function URL rows
# A verdict whose break-even billed duration is this close to the measured one is flagged: the
# in-process durations of this machine vary from run to run by about as much.
CLOSE_MS = 5.0
# Per protocol: (steady heartbeat scenario, group timer scenario) of cost.py.
SCENARIOS = {CLASSIC: (HEARTBEAT, CLASSIC_TIMER), CONSUMER: (CONSUMER_HEARTBEAT, CONSUMER_TIMER)}
# Samples of the duration measurement: (steady heartbeats, timer checks, warm-up rounds,
# WARM_UP_ROUNDS below); a smoke run's, which only checks the path.
SAMPLES, SMOKE_SAMPLES = (100, 15, 3), (8, 2, 0)


def template_lambda() -> LambdaSetting:
    """The functions' architecture and memory size as template.yaml deploys them by default."""
    template = yaml_parse(TEMPLATE.read_text())
    function = template["Globals"]["Function"]
    (architecture,) = function["Architectures"]
    memory = function["MemorySize"]
    if isinstance(memory, dict):  # !Ref to a parameter: its default
        memory = template["Parameters"][memory["Ref"]]["Default"]
    return LambdaSetting(architecture, int(memory))


TEMPLATE_LAMBDA = template_lambda()
ARCHITECTURE, MEMORY_MB = TEMPLATE_LAMBDA.architecture, TEMPLATE_LAMBDA.memory_mb
# Other Lambda settings, for the sensitivity table (the template's is marked).
ALTERNATIVES = (("x86_64", 512), ("arm64", 512), ("arm64", 256), ("arm64", 128))


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


def measure_duration_ms(
    check_sizes: list[int], samples: int = 100, check_samples: int = 15, warm_up_rounds: int = 3
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
        warm_up(coordinator, samples, warm_up_rounds)
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


def warm_up(coordinator: InProcess, samples: int, rounds: int) -> None:
    """`rounds` of heartbeats of both protocols, run and thrown away before any is timed: a
    Lambda function bills the heartbeats of a warm instance (cold starts are priced apart), and
    the first rounds on a fresh engine and process ran up to twice the steady time (a quiet
    consumer heartbeat: 7.7, then 5.9, 4.9, 4.0 and 4.0 ms, 2026-12-06: DynamoDB Local's JIT and
    this process's own first calls)."""
    for _ in range(rounds):
        for protocol in (CLASSIC, CONSUMER):
            beat, ids, _ = built_group(coordinator, protocol, 10)
            steady_ms(coordinator, protocol, beat, ids, samples)


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


# --- the figures: cost.py's audited units, the durations measured here ---


def cost_rows(smoke: bool) -> tuple[list[dict[str, Any]], str]:
    """cost.py's rows and where they come from: bench/.results/cost.json, or a run of
    bench.cost started here when that lacks the rows needed (a smoke run always starts its
    own, tiny, and saves nothing)."""
    rows = None if smoke else load_results("cost")
    source = "bench/.results/cost.json, written by `python -m bench.cost`"
    if not has_needed_rows(rows):
        from bench import cost

        if smoke:
            rows = [asdict(r) for r in cost.main(["--smoke"])]
            source = "`python -m bench.cost --smoke`, run by this script"
        else:
            cost.main(["--sizes", "10,1000", "--no-write"])
            rows = load_results("cost")
            source = "`python -m bench.cost --sizes 10,1000`, run by this script"
    assert rows is not None and has_needed_rows(rows), "cost.json lacks the rows needed"
    return rows, source


def build_model(rows: list[dict[str, Any]], samples: tuple[int, int, int]) -> Model:
    """The model of cost.py's units and the durations measured here (without the audit)."""
    measured: dict[str, tuple[dict[int, Units], dict[int, Units]]] = {
        protocol: (heartbeat_units(rows, steady + NOT_DUE), heartbeat_units(rows, steady + DUE))
        for protocol, (steady, _) in SCENARIOS.items()
    }
    checks = {protocol: timer_checks(rows, protocol) for protocol in SCENARIOS}
    check_sizes = sorted({m for protocol in SCENARIOS for m in checks[protocol]})
    durations, check_ms = measure_duration_ms(check_sizes, *samples)
    checks = {  # units from cost.py's audit, handler time measured here without it
        protocol: {m: replace(c, seconds=check_ms[protocol][m] / 1000) for m, c in found.items()}
        for protocol, found in checks.items()
    }
    # The push channel's calls (bench/cost_push.py), for the member-month with push on.
    push = measure_push_calls(samples[1])
    return Model(measured, checks, durations, TEMPLATE_LAMBDA, push=push)


# --- the tables ---


def skips_label(skips: int) -> str:
    return f"{skips}{' (default)' if skips == RENEWAL_SKIPS else ''}"


def by_door(model: Model, skips_shown: Sequence[int]) -> dict[tuple[str, int, int, str], float]:
    """(protocol, members, skips, front door) -> $ per member-month (the heartbeat is the same
    behind either door, only the front door's line differs)."""
    found = {}
    for protocol in SCENARIOS:
        for members in model.sizes(protocol):
            for skips in skips_shown:
                costs = model.month(protocol, members, skips)
                for door, price in FRONT_DOORS.items():
                    behind = {**costs, "front door": price * model.beats_per_month}
                    found[protocol, members, skips, door] = sum(behind.values())
    return found


def model_table(model: Model, skips_shown: Sequence[int]) -> str:
    """$ per member-month by line, per protocol, size, skips and front door."""
    rows = []
    for protocol in SCENARIOS:
        for members in model.sizes(protocol):
            for skips in skips_shown:
                costs = model.month(protocol, members, skips)
                share = sum(model.timer_month(protocol, members, skips).values()) / members
                read, write = model.units(protocol, members, skips)
                for door, price in FRONT_DOORS.items():
                    behind = {**costs, "front door": price * model.beats_per_month}
                    rows.append(
                        (
                            f"{protocol}, {members:,} members, {door}",
                            skips_label(skips),
                            f"{read:.3f}",
                            f"{write:.3f}",
                            *(usd(v) for v in behind.values()),
                            f"**{usd(sum(behind.values()))}**",
                            usd(share),
                        )
                    )
    return table(
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
        rows,
    )


def timer_table(model: Model, skips_shown: Sequence[int]) -> str:
    """The group timer checks per group-month, per protocol, size and skips."""
    rows = []
    for protocol in SCENARIOS:
        for members in model.sizes(protocol):
            check = model.checks[protocol][members]
            for skips in skips_shown:
                parts = model.timer_month(protocol, members, skips)
                interval = check_interval_s(protocol, skips)
                rows.append(
                    (
                        f"{protocol}, {members:,} members",
                        skips_label(skips),
                        f"{interval:g} s (session {SESSION_S[protocol]:g} s)",
                        f"{MONTH_S / interval:,.0f}",
                        f"{num(check.read)} / {num(check.write)} / {check.seconds * 1000:.0f}",
                        usd(parts["DynamoDB reads"] + parts["DynamoDB writes"]),
                        usd(parts["Lambda duration"]),
                        f"**{usd(sum(parts.values()))}**",
                        usd(sum(parts.values()) / members),
                    )
                )
    return table(
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
        rows,
    )


def short_sessions_table(model: Model) -> str:
    """Classic members with shorter sessions than the default: checks come more often."""
    rows = []
    for session_s in SHORT_CLASSIC_SESSIONS_S:
        # The slack is at most a third of the session: a short one skips fewer heartbeats.
        skips = effective_skips(
            int(INTERVAL_S[CLASSIC] * 1000), RENEWAL_SKIPS, int(session_s * 1000)
        )
        interval = check_interval_s(CLASSIC, skips, session_s)
        for members in model.sizes(CLASSIC):
            timers = model.timer_month(CLASSIC, members, skips, session_s=session_s)
            cost = sum(model.month(CLASSIC, members, skips, session_s=session_s).values())
            rows.append(
                (
                    f"classic, {members:,} members",
                    f"{session_s:g} s",
                    f"{skips}",
                    f"{interval:g} s",
                    usd(sum(timers.values())),
                    f"**{usd(cost)}**",
                    "meets" if cost <= TARGET_USD else f"misses by {usd(cost - TARGET_USD)}",
                )
            )
    return table(
        (
            f"shorter classic sessions, skips setting {RENEWAL_SKIPS}",
            "session",
            "heartbeats skipped (a third of the session at most)",
            "check every",
            "timer checks per group-month",
            "total per member-month",
            f"${TARGET_USD:.2f} target",
        ),
        rows,
    )


def kcl_table(model: Model) -> str:
    """groupcoord (classic, per member) beside a KCL lease table (per partition)."""
    lease_month = kcl_lease_month()

    def member_month(members: int) -> float:
        """The classic per-member figure (default skips) of the measured group size closest
        to `members`."""
        closest = min(model.sizes(CLASSIC), key=lambda n: abs(n - members))
        return model.total(CLASSIC, closest, RENEWAL_SKIPS)

    return table(
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


def price_table() -> str:
    return table(
        ("us-east-1 list price", "USD"),
        [
            (
                f"{name}, the template's (used here)" if ARCHITECTURE in name else name,
                f"{value:.10f}".rstrip("0") if "GB" in name else f"{value * 1e6:.3f} per million",
            )
            for name, value in PRICES.items()
        ],
    )


def settings_shown() -> list[LambdaSetting]:
    """The Lambda settings of the sensitivity table, the template's last unless listed."""
    found = dict.fromkeys((*ALTERNATIVES, (ARCHITECTURE, MEMORY_MB)))
    return [LambdaSetting(arch, mb) for arch, mb in found]


def sensitivity_size(model: Model) -> int:
    """The consumer-protocol size the other Lambda settings are shown at: closest to 1,000."""
    return min(model.sizes(CONSUMER), key=lambda n: abs(n - 1000))


def by_setting(
    model: Model, skips_shown: Sequence[int]
) -> dict[tuple[LambdaSetting, int], dict[str, float]]:
    """The same consumer-protocol heartbeat under other Lambda settings, per skips shown."""
    size = sensitivity_size(model)
    return {
        (setting, skips): model.month(CONSUMER, size, skips, setting)
        for setting in settings_shown()
        for skips in skips_shown
    }


def alternatives_table(model: Model, skips_shown: Sequence[int]) -> str:
    found = by_setting(model, skips_shown)
    return table(
        (
            "Lambda",
            "Lambda duration / member-month",
            f"total / member-month, skips {RENEWAL_SKIPS}",
            *(["total / member-month, skips 0"] if RENEWAL_SKIPS else []),
        ),
        [
            (
                f"{s.architecture}, {s.memory_mb} MB"
                + (" (template.yaml)" if s == TEMPLATE_LAMBDA else ""),
                usd(found[s, RENEWAL_SKIPS]["Lambda duration"]),
                *(usd(sum(found[s, skips].values())) for skips in skips_shown),
            )
            for s in settings_shown()
        ],
    )


# --- the verdicts and notes ---


def protocol_verdict(model: Model, protocol: str) -> str:
    """The target at the defaults (template Lambda, skips) for one protocol's sizes."""
    sizes = model.sizes(protocol)
    total = {m: model.total(protocol, m, RENEWAL_SKIPS) for m in sizes}
    met = [m for m in sizes if total[m] <= TARGET_USD]
    missed = [m for m in sizes if m not in met]
    figures = ", ".join(
        f"{m:,} members ${total[m]:.4f}"
        + (f", over by ${total[m] - TARGET_USD:.4f}" if m in missed else "")
        for m in sizes
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
    return f"the {protocol} {verdict} ({figures})"


def break_even_text(model: Model) -> str:
    """The average billed duration at which each default row costs $1.00 (none when it costs
    more than that without any steady duration charge), and the rows too close to call."""
    break_even, close = [], []
    for p in SCENARIOS:
        for m in model.sizes(p):
            reach_ms, rest = model.break_even_ms(p, m, RENEWAL_SKIPS)
            measured_ms = model.duration_ms(p, RENEWAL_SKIPS)
            if abs(reach_ms - measured_ms) < CLOSE_MS:
                close.append(f"{p}, {m:,} members")
            break_even.append(
                f"{p}, {m:,} members: {reach_ms:.1f} ms (measured {measured_ms:.1f})"
                if reach_ms > 0
                else f"{p}, {m:,} members: none (${rest:.4f} without it)"
            )
    text = (
        " The average billed duration of a steady heartbeat at which each costs $1.00: "
        + "; ".join(break_even)
        + "."
    )
    if close:
        text += (
            f" Within {CLOSE_MS:g} ms of it, so on either side of the target from one run to "
            "the next on this shared machine (the measured durations vary by more than that): "
            + "; ".join(close)
            + "."
        )
    return text


def target_text(model: Model) -> str:
    """The $1.00 target per protocol and size, at the defaults and at skips 0."""
    return (
        f"**Target: at or under ${TARGET_USD:.2f} per member-month at a 5 s heartbeat** with the "
        f"template's Lambda ({ARCHITECTURE}, {MEMORY_MB} MB) and the default "
        f"`groupcoord.session.renewal.skips` ({RENEWAL_SKIPS}), timer checks included: "
        + "; ".join(protocol_verdict(model, p) for p in SCENARIOS)
        + ". At skips 0: "
        + "; ".join(
            f"{p}, {m:,} members ${model.total(p, m, 0):.4f}"
            + (" (misses)" if model.total(p, m, 0) > TARGET_USD else "")
            for p in SCENARIOS
            for m in model.sizes(p)
        )
        + "."
        + break_even_text(model)
    )


def front_door_verdict(model: Model, skips_shown: Sequence[int]) -> str:
    """Issue #32's targets, per front door and measured size, at the default skips."""
    doors = by_door(model, skips_shown)
    parts = []
    for door, target in (
        (FUNCTION_URL_DOOR, FUNCTION_URL_TARGET_USD),
        (HTTP_API_DOOR, HTTP_API_GOAL_USD),
    ):
        figures = []
        for protocol in SCENARIOS:
            for members in model.sizes(protocol):
                cost = doors[protocol, members, RENEWAL_SKIPS, door]
                verdict = "meets" if cost <= target else f"misses by ${cost - target:.4f}"
                figures.append(f"{protocol}, {members:,} members ${cost:.4f} ({verdict})")
        parts.append(f"behind the {door}, at or under ${target:.2f}: " + "; ".join(figures))
    exact = ""
    if 0 in skips_shown and RENEWAL_SKIPS:
        worst = max(v for (_, _, k, d), v in doors.items() if k == 0 and d == FUNCTION_URL_DOOR)
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


def scaling_text(model: Model, protocol: str) -> str:
    """What a member pays at any size, what the group's checks add divided among its members,
    and the size from which the target is met (the checks' cost per group taken as linear in
    the members, fitted on the sizes measured)."""
    sizes = model.sizes(protocol)
    per_member = {m: sum(model.steady_month(protocol, m, RENEWAL_SKIPS).values()) for m in sizes}
    group = {m: sum(model.timer_month(protocol, m, RENEWAL_SKIPS).values()) for m in sizes}
    steady_figures = {usd(v) for v in per_member.values()}
    text = (
        f"{protocol}: "
        + (
            f"{steady_figures.pop()} per member-month for the steady heartbeats, the same at "
            "every size"
            if len(steady_figures) == 1
            else ", ".join(f"{usd(per_member[m])} at {m:,} members" for m in sizes)
            + " per member-month for the steady heartbeats"
        )
        + ", plus the timer checks at "
        + ", ".join(
            f"{m:,} members {usd(group[m])} per group-month = {usd(group[m] / m)} per member"
            for m in sizes
        )
    )
    if len(sizes) >= 2:
        fit = GroupFit.of(group, per_member[sizes[-1]])
        members = fit.target_from()
        if members is None:
            text += f"; the per-member part alone (${fit.per_member:.4f}) is over the target"
        elif not members:
            text += "; the fixed part of the checks is none: the target holds at any size"
        else:
            text += (
                f"; fitted as {usd(fit.fixed)} + {usd(fit.slope)} per member per group-month, "
                f"the target is met from about {members:,.0f} members on (an "
                "estimate from the sizes measured at this run's durations, not a "
                "measurement)"
            )
    return text + "."


def per_group_text(model: Model) -> str:
    return (
        "What scales per member and what is per group, at the default skips: "
        + " ".join(scaling_text(model, p) for p in SCENARIOS)
        + " A small group pays more per member because its checks (a few writes each, and a "
        "read of every member) are shared by fewer members."
    )


def renewal_text(model: Model) -> str:
    """What session renewal skipping saves, against skips 0 (Kafka's exact timing)."""
    if not RENEWAL_SKIPS:
        return (
            "Session renewal: `groupcoord.session.renewal.skips` is 0 by default here: every "
            "heartbeat writes the member's session deadline (Kafka's exact timing)."
        )
    extra = sorted(
        model.total(p, m, 0) - model.total(p, m, RENEWAL_SKIPS)
        for p in SCENARIOS
        for m in model.sizes(p)
    )
    low, high = usd(extra[0]), usd(extra[-1])
    spread = low if low == high else f"{low} to {high}"
    size = sensitivity_size(model)
    exact, skipping = (model.month(CONSUMER, size, k) for k in (0, RENEWAL_SKIPS))
    more = {k: exact[k] - skipping[k] for k in exact}
    # RCU of a heartbeat, renewal not due and due, in the largest group measured.
    reads = {
        p: tuple(max(kind.items())[1][0] for kind in model.measured[p]) for p in model.measured
    }
    same = all(abs(quiet - due) < 0.01 for quiet, due in reads.values())
    how = {
        p: " (the group item eventually consistent, the member item consistent)"
        if abs(reads[p][0] - 1.5) < 0.01
        else ""
        for p in reads
    }
    slack_s = (RENEWAL_SKIPS + 0.5) * HEARTBEAT_S
    return (
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


def durations_note(model: Model) -> str:
    """The heartbeat and sessions the model takes, and the billed durations measured here."""
    durations = model.durations
    return (
        f"Heartbeat every {HEARTBEAT_S:.0f} s ({model.beats_per_month:,.0f} per member per "
        f"30-day month). Sessions: {SESSION_S[CLASSIC]:g} s for classic members (the Kafka "
        "consumer's default `session.timeout.ms`, and groupcoord's client's, which sends its "
        "heartbeat interval as `heartbeatFrequency` and `failedHeartbeatThreshold`: 9 here; "
        f"shorter sessions in the table below), {SESSION_S[CONSUMER]:g} s for the consumer "
        "protocol "
        "(`group.consumer.session.timeout.ms`, its default and its minimum); the session only "
        "sets how often the timer checks come. Lambda as template.yaml deploys it: "
        f"{ARCHITECTURE}, {MEMORY_MB} MB, billed per steady heartbeat the p50 measured "
        "in-process against DynamoDB Local in a 10-member group, after "
        f"{SAMPLES[2]} rounds of untimed heartbeats (a warm function's steady state; the first "
        "rounds on a fresh engine ran up to twice as long): "
        + "; ".join(
            f"{p} {durations[p].renewing_ms:.1f} ms when it renews the session, "
            f"{durations[p].quiet_ms:.1f} ms "
            f"when it only reads ({model.duration_ms(p, RENEWAL_SKIPS):.1f} ms on average at "
            f"skips {RENEWAL_SKIPS})"
            for p in SCENARIOS
        )
        + ". Of that, this process's CPU time (the handler and botocore; the rest is waiting "
        "for DynamoDB Local, a separate process): "
        + "; ".join(f"{p} {durations[p].cpu_ms:.1f} ms" for p in SCENARIOS)
        + ". On AWS each DynamoDB round trip takes a few ms, less than DynamoDB Local's here, but "
        f"Lambda gives a function CPU in proportion to its memory ({MEMORY_MB} MB is about "
        f"{MEMORY_MB / FULL_VCPU_MB:.2f} of a vCPU), so the CPU part takes longer there: the "
        "measured time is an estimate, not a bound either way. On this shared 2-core machine "
        "it varies from run to run."
    )


def timer_checks_note() -> str:
    intervals = "; ".join(
        f"{p}: session {SESSION_S[p]:g} s, a check every {check_interval_s(p, 0):g} s at skips "
        f"0 and {check_interval_s(p, max(1, RENEWAL_SKIPS)):g} s at skips >= 1"
        for p in SCENARIOS
    )
    return (
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
        "heartbeat heartbeats between two checks."
    )


def settings_note(model: Model) -> str:
    """Other Lambda settings: what the heartbeat costs without any duration charge, and which
    settings meet the target."""
    found = by_setting(model, (RENEWAL_SKIPS,))
    no_duration = sum(
        v for k, v in found[TEMPLATE_LAMBDA, RENEWAL_SKIPS].items() if k != "Lambda duration"
    )
    totals = {s: sum(found[s, RENEWAL_SKIPS].values()) for s in settings_shown()}
    under = [f"{s.architecture} {s.memory_mb} MB" for s, v in totals.items() if v <= TARGET_USD]
    over = [
        f"{s.architecture} {s.memory_mb} MB (${v:.3f})" for s, v in totals.items() if v > TARGET_USD
    ]
    if no_duration > TARGET_USD:
        reach = "so no architecture or memory size brings it to $1.00."
    elif under:
        reach = "and the total is at or under $1.00 with " + ", ".join(under)
        reach += f", over it with {', '.join(over)}." if over else "."
    else:
        reach = "so only a shorter billed duration brings it to $1.00."
    return (
        f"Other Lambda settings (consumer protocol, {sensitivity_size(model):,} members) at the "
        "same billed duration: "
        f"without any duration charge the heartbeat costs {usd(no_duration)} per "
        f"member-month at skips {RENEWAL_SKIPS} (API Gateway, Lambda requests and DynamoDB), "
        f"{reach} The table assumes the duration does not change with memory; Lambda gives "
        "CPU in proportion to memory, so at less memory the CPU-bound part of a call takes "
        "longer and costs the same GB-seconds: only its wait on DynamoDB gets cheaper."
    )


def sources_notes(source: str) -> list[str]:
    """Where the units come from, the KCL side and the prices."""
    return [
        f"Units per heartbeat: the audited figures of {source}: a steady heartbeat whose "
        "renewal is not due and one whose renewal is due, weighted (skips x not due + due) / "
        "(skips + 1), plus the group's timer checks spread over its heartbeats (above).",
        f"KCL lease table: one conditional UpdateItem (1 WRU, lease items < 1 KB) per lease every "
        f"{KCL_RENEWAL_S:.1f} s = {usd(kcl_lease_month())} per lease-month; KCL runs in the "
        "consumers, so there is no API Gateway or Lambda, and its periodic lease-table scans "
        "and checkpoints are left out (as are groupcoord's offset commits).",
        "groupcoord side of the comparison: the classic per member-month figure (default skips, "
        "timer checks included) of the measured group size closest to the deployment's. "
        "groupcoord costs per member, KCL per partition: groupcoord is the cheaper the more "
        "partitions each member owns.",
        f"Prices: {PRICES_AS_OF}, from memory of the AWS pricing pages, not fetched: check "
        "them before quoting. Free tiers are ignored.",
    ]


def report(model: Model, source: str) -> list[str]:
    """The section's parts: the tables, then the notes."""
    skips_shown = (RENEWAL_SKIPS, 0) if RENEWAL_SKIPS else (0,)
    return [
        price_table(),
        model_table(model, skips_shown),
        timer_table(model, skips_shown),
        short_sessions_table(model),
        kcl_table(model),
        alternatives_table(model, skips_shown),
        durations_note(model),
        target_text(model),
        front_door_verdict(model, skips_shown),
        per_group_text(model),
        timer_checks_note(),
        renewal_text(model),
        settings_note(model),
        *sources_notes(source),
        *push_parts(model),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument(
        "--smoke", action="store_true", help="a tiny run that checks the path; writes nothing"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows, source = cost_rows(args.smoke)
    model = build_model(rows, SMOKE_SAMPLES if args.smoke else SAMPLES)
    parts = report(model, source)
    elapsed = time.perf_counter() - started
    for part in (*parts, f"took {elapsed:.0f}s"):
        print(part, end="\n\n")
    if not (args.no_write or args.smoke):
        body = "\n\n".join([*parts, f"The run took {elapsed:.0f} s."])
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        section = "Cost model: $ per member-month"
        print(f"wrote {write_section('cost_model', section, command, body)}")


if __name__ == "__main__":
    main()
