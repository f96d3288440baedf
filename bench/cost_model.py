"""Cost model: $ per member-month at a 5 s heartbeat on AWS, next to a Kinesis Client Library
style lease table (one conditional write per lease every ~3.3 s) for the same partitions.

    python -m bench.cost_model [--no-write]

Units per heartbeat come from bench/cost.py's audited figures (bench/.results/cost.json; the
script runs bench/cost.py for 10 and 1,000 members first if that file is missing or predates
the split below). A steady heartbeat writes the member's session deadline only when it is less
than one session away (`groupcoord.session.renewal.skips`, core/session_renewal.py): of every
skips + 1 steady heartbeats one renews (reads and a conditional write) and the others only
read, so the model takes (skips x not due + due) / (skips + 1) of each figure, at the default
skips and at 0 (every heartbeat writes, Kafka's exact session timing). The Lambda duration is
measured here, for both kinds: the in-process handler time of steady heartbeats (p50) against a
moto server, an upper bound for AWS, where a heartbeat waits for 2 or 3 DynamoDB round trips.
The functions' architecture and memory size are template.yaml's (Globals, parameter defaults).
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
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
    create_topic,
    load_results,
    moto_server,
    percentile,
    table,
    write_section,
)
from bench.cost import (
    CONSUMER_HEARTBEAT,
    DUE,
    HEARTBEAT,
    NOT_DUE,
    RENEWAL_SKIPS,
    renewal_skips,
)

COMMAND = "python -m bench.cost_model"
PRICES_AS_OF = "list prices as known in mid-2025 (DynamoDB after its Nov 2024 on-demand cut)"
# us-east-1 list prices in USD. They must be checked against the AWS pricing pages.
PRICES = {
    "API Gateway HTTP API, per request (first 300 M / month)": 1.00 / 1e6,
    "Lambda, per request": 0.20 / 1e6,
    "Lambda, per GB-second (arm64)": 0.0000133334,
    "Lambda, per GB-second (x86_64)": 0.0000166667,
    "DynamoDB on-demand, per write request unit": 0.625 / 1e6,
    "DynamoDB on-demand, per read request unit": 0.125 / 1e6,
}
API_GATEWAY = PRICES["API Gateway HTTP API, per request (first 300 M / month)"]
LAMBDA_REQUEST = PRICES["Lambda, per request"]
WRU = PRICES["DynamoDB on-demand, per write request unit"]
RRU = PRICES["DynamoDB on-demand, per read request unit"]
TEMPLATE = Path(__file__).resolve().parents[1] / "template.yaml"
HEARTBEAT_S = 5.0
SESSION_S = 3 * HEARTBEAT_S  # heartbeatFrequency 3 (the default): session = 3 intervals
MONTH_S = 30 * 24 * 3600
KCL_RENEWAL_S = 10.0 / 3  # KCL: failoverTimeMillis 10 s, renewals every third of it
# (members, partitions) deployments to compare.
DEPLOYMENTS = ((10, 1_000), (100, 1_000), (1_000, 1_000), (1_000, 10_000), (5_000, 100_000))


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


def heartbeat_units(rows: list[dict[str, Any]], scenario: str) -> dict[int, tuple[float, float]]:
    """members -> (read units, write units incl. GSI) per call, from cost.py's audit."""
    found = {}
    for row in rows:
        if row["scenario"] == scenario and row["samples"]:
            members = int(row["members"].replace(",", ""))
            found[members] = (row["audit_read"], row["audit_write"] + row["audit_index_write"])
    return found


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


def measure_duration_ms(samples: int = 100) -> tuple[float, float]:
    """p50 in-process handler time of a steady heartbeat (10-member group, built directly):
    (renewal not due, renewal due). Due: skips 0, where every heartbeat renews; not due: the
    default skips (at least 1), each member having renewed once first."""
    with moto_server() as endpoint:
        coordinator = InProcess(endpoint)
        create_topic(coordinator, TOPIC, 1000)
        group_id = f"model-{uuid.uuid4().hex[:8]}"
        ids = build_classic_group_direct(coordinator, group_id, 10)

        def beat(i: int) -> Call:
            body = {"groupId": group_id, "generationId": 1, "memberId": ids[i % len(ids)]}
            answer = coordinator.call("heartbeat", body)
            assert answer.status == 200 and answer.error_code == 0, answer.body
            return answer

        with renewal_skips(coordinator, 0):
            due = [beat(i) for i in range(samples)]  # the first calls warm the handler up
        with renewal_skips(coordinator, max(1, RENEWAL_SKIPS)):
            for i in range(len(ids)):
                beat(i)  # renews: the next heartbeats find the session a whole session ahead
            not_due = [beat(i) for i in range(samples)]
    assert all(a.usage.write_units > 0 for a in due), "a due renewal wrote nothing"
    assert not any(a.usage.write_units for a in not_due), "a heartbeat not due wrote"
    quiet, renewing = ([a.seconds * 1000 for a in calls[5:]] for calls in (not_due, due))
    return percentile(quiet, 50), percentile(renewing, 50)


def per_heartbeat(
    read_units: float,
    write_units: float,
    duration_ms: float,
    gb_s_price: float = LAMBDA_GB_S,
    memory_gb: float = MEMORY_GB,
) -> dict[str, float]:
    return {
        "API Gateway": API_GATEWAY,
        "Lambda requests": LAMBDA_REQUEST,
        "Lambda duration": duration_ms / 1000 * memory_gb * gb_s_price,
        "DynamoDB writes": write_units * WRU,
        "DynamoDB reads": read_units * RRU,
    }


def usd(value: float) -> str:
    if value >= 100:
        return f"${value:,.0f}"
    return f"${value:,.2f}" if value >= 1 else f"${value:.4f}"


def has_renewal_rows(rows: list[dict[str, Any]] | None) -> bool:
    """Whether cost.json measures steady heartbeats both ways (renewal due and not due)."""
    return rows is not None and all(
        heartbeat_units(rows, base + kind)
        for base in (HEARTBEAT, CONSUMER_HEARTBEAT)
        for kind in (NOT_DUE, DUE)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = load_results("cost")
    source = "bench/.results/cost.json, written by `python -m bench.cost`"
    if not has_renewal_rows(rows):
        from bench import cost

        cost.main(["--sizes", "10,1000", "--no-write"])
        rows = load_results("cost")
        source = "`python -m bench.cost --sizes 10,1000`, run by this script"
    assert rows is not None
    measured = {
        protocol: (heartbeat_units(rows, base + NOT_DUE), heartbeat_units(rows, base + DUE))
        for protocol, base in (("classic", HEARTBEAT), ("consumer protocol", CONSUMER_HEARTBEAT))
    }
    timer = heartbeat_units(rows, "heartbeat, group timer due (expiry check)")
    quiet_ms, renewing_ms = measure_duration_ms()
    beats_per_month = MONTH_S / HEARTBEAT_S
    current = (ARCHITECTURE, MEMORY_MB)
    skips_shown = (RENEWAL_SKIPS, 0) if RENEWAL_SKIPS else (0,)

    def duration_ms(skips: int) -> float:
        """The billed duration of the average steady heartbeat at `skips`."""
        return (skips * quiet_ms + renewing_ms) / (skips + 1)

    def units(protocol: str, members: int, skips: int) -> tuple[float, float]:
        """(read, write) units of the average heartbeat. A classic group's timers are checked
        by one heartbeat every (session - interval) at most, i.e. once per 2N heartbeats of an
        N-member group: that check's cost, spread over them."""
        read, write = blended(*measured[protocol], skips)[members]
        if protocol == "classic":
            t_read, t_write = timer.get(members, (0.0, 0.0))
            spread = members * (SESSION_S - HEARTBEAT_S) / HEARTBEAT_S
            read, write = read + t_read / spread, write + t_write / spread
        return read, write

    def month(
        protocol: str, members: int, skips: int, gb_s_price: float, memory_gb: float
    ) -> dict[str, float]:
        read, write = units(protocol, members, skips)
        parts = per_heartbeat(read, write, duration_ms(skips), gb_s_price, memory_gb)
        return {k: v * beats_per_month for k, v in parts.items()}

    model_rows = []
    total: dict[tuple[str, int, int], float] = {}
    for protocol, (not_due, due) in measured.items():
        for members in sorted(set(not_due) & set(due)):
            for skips in skips_shown:
                costs = month(protocol, members, skips, LAMBDA_GB_S, MEMORY_GB)
                total[protocol, members, skips] = sum(costs.values())
                read, write = units(protocol, members, skips)
                default = " (default)" if skips == RENEWAL_SKIPS else ""
                model_rows.append(
                    (
                        f"{protocol}, {members:,} members",
                        f"{skips}{default}",
                        f"{read:.3f}",
                        f"{write:.3f}",
                        *(usd(v) for v in costs.values()),
                        f"**{usd(total[protocol, members, skips])}**",
                    )
                )
    model_table = table(
        (
            "per member-month",
            "session.renewal.skips",
            "RCU / heartbeat",
            "WCU / heartbeat",
            "API Gateway",
            "Lambda requests",
            "Lambda duration",
            "DynamoDB writes",
            "DynamoDB reads",
            "total",
        ),
        model_rows,
    )
    lease_month = MONTH_S / KCL_RENEWAL_S * WRU  # one 1-WRU conditional write per renewal
    classic_sizes = sorted(m for p, m, k in total if p == "classic" and k == RENEWAL_SKIPS)

    def member_month(members: int) -> float:
        """The classic per-member figure (default skips) of the measured group size closest
        to `members`."""
        closest = min(classic_sizes, key=lambda n: abs(n - members))
        return total["classic", closest, RENEWAL_SKIPS]

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
    consumer_sizes = sorted(m for p, m, k in total if p == "consumer protocol" and k == 0)
    size = min(consumer_sizes, key=lambda n: abs(n - 1000))
    settings = list(dict.fromkeys((*ALTERNATIVES, current)))
    by_setting = {
        (arch, mb, skips): month(
            "consumer protocol",
            size,
            skips,
            PRICES[f"Lambda, per GB-second ({arch})"],
            mb / 1024,
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
    under = [f"{a} {mb} MB" for (a, mb), v in totals.items() if v <= 1.0]
    over = [f"{a} {mb} MB (${v:.3f})" for (a, mb), v in totals.items() if v > 1.0]
    if no_duration[RENEWAL_SKIPS] > 1.0:
        reach = "so no architecture or memory size brings it to $1.00."
    elif under:
        reach = "and the total is at or under $1.00 with " + ", ".join(under)
        reach += f", over it with {', '.join(over)}." if over else "."
    else:
        reach = "so only a shorter billed duration brings it to $1.00."
    slack_s = (RENEWAL_SKIPS + 0.5) * HEARTBEAT_S
    default_rows = {k: v for k, v in total.items() if k[2] == RENEWAL_SKIPS}
    met = [f"{p}, {m:,} members (${v:.3f})" for (p, m, _), v in default_rows.items() if v <= 1]
    missed = [f"{p}, {m:,} members (${v:.3f})" for (p, m, _), v in default_rows.items() if v > 1]
    target = (
        "Target: at or under $1.00 per member-month at a 5 s heartbeat with the template's "
        f"Lambda ({ARCHITECTURE}, {MEMORY_MB} MB) and the default "
        f"`groupcoord.session.renewal.skips` ({RENEWAL_SKIPS}): "
        + (f"met for {'; '.join(met)}" if met else "met for none")
        + (f"; not met for {'; '.join(missed)}." if missed else ".")
    )
    # The average billed duration at which each default row costs $1.00 (none when it costs
    # more than that without any duration charge).
    ms_price = beats_per_month * MEMORY_GB * LAMBDA_GB_S / 1000
    break_even = []
    for p, m, _ in default_rows:
        rest = sum(
            v
            for k, v in month(p, m, RENEWAL_SKIPS, LAMBDA_GB_S, MEMORY_GB).items()
            if k != "Lambda duration"
        )
        reach_ms = (1.0 - rest) / ms_price
        break_even.append(
            f"{p}, {m:,} members: {reach_ms:.0f} ms"
            if reach_ms > 0
            else f"{p}, {m:,} members: none (${rest:.3f} without it)"
        )
    target += (
        f" The average billed duration at which each costs $1.00 (measured: "
        f"{duration_ms(RENEWAL_SKIPS):.1f} ms): " + "; ".join(break_even) + "."
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
        renewal = (
            f"Session renewal: `groupcoord.session.renewal.skips` is {RENEWAL_SKIPS} by default "
            "(0 to 4). A steady heartbeat writes the member's session deadline (one conditional "
            "write, 1 WCU) only when it is less than one session away, and a renewal sets it "
            "(skips + 1/2) heartbeat intervals past one session, so 1 of every "
            f"{RENEWAL_SKIPS + 1} steady heartbeats writes and the others only read: the WCU "
            "column is the mean over them. Reads, "
            + ("the same either way: " if same else "when the renewal is not due: ")
            + f"{reads['classic'][0]:g} RCU for a classic heartbeat (group and member items, "
            f"consistent), {reads['consumer protocol'][0]:g} for a consumer-protocol one (the "
            "group item eventually consistent, the member item consistent). The price: a member "
            "that goes silent is removed between one session timeout and (skips + 1/2) "
            f"heartbeat intervals later (up to {slack_s:g} s after its session at a "
            f"{HEARTBEAT_S:.0f} s heartbeat), where Kafka removes it at one session timeout "
            "exactly. Skips 0 restores the exact timing and writes on every heartbeat (the rows "
            f"marked 0 above): {spread} more per member-month; for the consumer protocol at "
            f"{size:,} members {usd(sum(exact.values()))} instead of "
            f"{usd(sum(skipping.values()))}, of which {usd(more['DynamoDB writes'])} DynamoDB "
            f"writes and {usd(more['Lambda duration'])} the longer billed duration measured for "
            "a heartbeat that writes."
        )
    else:
        renewal = (
            "Session renewal: `groupcoord.session.renewal.skips` is 0 by default here: every "
            "heartbeat writes the member's session deadline (Kafka's exact timing)."
        )
    elapsed = time.perf_counter() - started
    notes = [
        f"Heartbeat every {HEARTBEAT_S:.0f} s ({beats_per_month:,.0f} per member per 30-day "
        f"month), session {SESSION_S:.0f} s. Lambda as template.yaml deploys it: "
        f"{ARCHITECTURE}, {MEMORY_MB} MB, billed {renewing_ms:.1f} ms per heartbeat that renews "
        f"the session and {quiet_ms:.1f} ms per heartbeat that only reads "
        f"({duration_ms(RENEWAL_SKIPS):.1f} ms on average at skips {RENEWAL_SKIPS}; p50 of "
        "classic heartbeats measured in-process "
        "against moto; on AWS two or three DynamoDB round trips take a few ms, so this "
        "overstates it).",
        renewal,
        target,
        f"Other Lambda settings (consumer protocol, {size:,} members) at the same billed duration: "
        f"without any duration charge the heartbeat costs {usd(no_duration[RENEWAL_SKIPS])} per "
        f"member-month at skips {RENEWAL_SKIPS} (API Gateway, Lambda requests and DynamoDB), "
        f"{reach} The table assumes the duration does not change with memory; Lambda gives "
        "CPU in proportion to memory, so at less memory the CPU-bound part of a call takes "
        "longer and costs the same GB-seconds: only its wait on DynamoDB gets cheaper.",
        f"Units per heartbeat: the audited figures of {source}: a steady heartbeat whose "
        "renewal is not due and one whose renewal is due, weighted (skips x not due + due) / "
        "(skips + 1); for classic groups plus the group's periodic expiry check (one heartbeat "
        "per group every session - interval reads every member) spread over the 2N heartbeats "
        "between two checks. With renewal skips the checks come a little less often (the "
        "earliest session deadline lies about session - interval/2 ahead after a check), so "
        "this overstates them slightly.",
        f"KCL lease table: one conditional UpdateItem (1 WRU, lease items < 1 KB) per lease every "
        f"{KCL_RENEWAL_S:.1f} s = {usd(lease_month)} per lease-month; KCL runs in the consumers, "
        "so there is no API Gateway or Lambda, and its periodic lease-table scans and "
        "checkpoints are left out (as are groupcoord's offset commits).",
        "groupcoord side of the comparison: the classic per member-month figure (default skips) "
        "of the measured group size closest to the deployment's. groupcoord costs per member, "
        "KCL per partition: groupcoord is the cheaper the more partitions each member owns.",
        f"Prices: {PRICES_AS_OF}, from memory of the AWS pricing pages, not fetched: check "
        "them before quoting. Free tiers are ignored.",
    ]
    for part in (price_table, model_table, compare, alternatives, *notes, f"took {elapsed:.0f}s"):
        print(part, end="\n\n")
    if not args.no_write:
        body = "\n\n".join(
            [
                price_table,
                model_table,
                compare,
                alternatives,
                *notes,
                f"The run took {elapsed:.0f} s.",
            ]
        )
        command = COMMAND if argv is None else f"{COMMAND} {' '.join(argv)}"
        section = "Cost model: $ per member-month"
        print(f"wrote {write_section('cost_model', section, command, body)}")


if __name__ == "__main__":
    main()
