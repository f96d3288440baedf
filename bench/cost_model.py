"""Cost model: $ per member-month at a 5 s heartbeat on AWS, next to a Kinesis Client Library
style lease table (one conditional write per lease every ~3.3 s) for the same partitions.

    python -m bench.cost_model [--no-write]

Units per heartbeat come from bench/cost.py's audited figures (bench/.results/cost.json; the
script runs bench/cost.py for 10 and 1,000 members first if that file is missing). The Lambda
duration is measured here: the in-process handler time of steady heartbeats (p50) against a
moto server, an upper bound for AWS, where a heartbeat waits for 2 DynamoDB round trips. The
functions' architecture and memory size are template.yaml's (Globals, parameter defaults).
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
    InProcess,
    build_classic_group_direct,
    create_topic,
    load_results,
    moto_server,
    percentile,
    table,
    write_section,
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


def measure_duration_ms(samples: int = 40) -> float:
    """p50 in-process handler time of a steady heartbeat (10-member group, built directly)."""
    with moto_server() as endpoint:
        coordinator = InProcess(endpoint)
        create_topic(coordinator, TOPIC, 1000)
        group_id = f"model-{uuid.uuid4().hex[:8]}"
        ids = build_classic_group_direct(coordinator, group_id, 10)
        times = []
        for i in range(samples):
            body = {"groupId": group_id, "generationId": 1, "memberId": ids[i % len(ids)]}
            answer = coordinator.call("heartbeat", body)
            assert answer.status == 200 and answer.error_code == 0, answer.body
            times.append(answer.seconds * 1000)
    return percentile(times[5:], 50)  # the first calls warm the handler up


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = load_results("cost")
    source = "bench/.results/cost.json, written by `python -m bench.cost`"
    if rows is None:
        from bench import cost

        cost.main(["--sizes", "10,1000", "--no-write"])
        rows = load_results("cost")
        source = "`python -m bench.cost --sizes 10,1000`, run by this script"
    steady = heartbeat_units(rows, "heartbeat, steady state")
    timer = heartbeat_units(rows, "heartbeat, group timer due (expiry check)")
    consumer = heartbeat_units(rows, "consumer-group-heartbeat, steady state")
    duration = measure_duration_ms()
    beats_per_month = MONTH_S / HEARTBEAT_S
    current = (ARCHITECTURE, MEMORY_MB)

    # A group's timers are checked by one heartbeat every (session - interval) at most, i.e.
    # once per 2N heartbeats of an N-member group: that check's cost, spread over them.
    model_rows, per_member = [], {}
    for members in sorted(steady):
        read, write = steady[members]
        t_read, t_write = timer.get(members, (0.0, 0.0))
        spread = members * (SESSION_S - HEARTBEAT_S) / HEARTBEAT_S
        read, write = read + t_read / spread, write + t_write / spread
        parts = per_heartbeat(read, write, duration)
        month = {k: v * beats_per_month for k, v in parts.items()}
        per_member[members] = sum(month.values())
        model_rows.append(
            (
                f"classic, {members:,} members",
                f"{read:.3f}",
                f"{write:.3f}",
                *(usd(v) for v in month.values()),
                f"**{usd(per_member[members])}**",
            )
        )
    for members, (read, write) in sorted(consumer.items()):
        month = {k: v * beats_per_month for k, v in per_heartbeat(read, write, duration).items()}
        model_rows.append(
            (
                f"consumer protocol, {members:,} members",
                f"{read:.3f}",
                f"{write:.3f}",
                *(usd(v) for v in month.values()),
                f"**{usd(sum(month.values()))}**",
            )
        )
    model_table = table(
        (
            "per member-month",
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

    def member_month(members: int) -> float:
        """The per-member figure of the measured group size closest to `members`."""
        return per_member[min(per_member, key=lambda n: abs(n - members))]

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
    # other Lambda settings.
    size = min(consumer, key=lambda n: abs(n - 1000))
    read, write = consumer[size]
    no_duration = sum(per_heartbeat(read, write, 0.0).values()) * beats_per_month
    alternatives = table(
        ("Lambda", "Lambda duration / member-month", "total / member-month"),
        [
            (
                f"{arch}, {mb} MB" + (" (template.yaml)" if (arch, mb) == current else ""),
                usd(cost := duration / 1000 * mb / 1024 * price * beats_per_month),
                usd(no_duration + cost),
            )
            for arch, mb in dict.fromkeys((*ALTERNATIVES, current))
            for price in [PRICES[f"Lambda, per GB-second ({arch})"]]
        ],
    )
    elapsed = time.perf_counter() - started
    notes = [
        f"Heartbeat every {HEARTBEAT_S:.0f} s ({beats_per_month:,.0f} per member per 30-day "
        f"month), session {SESSION_S:.0f} s. Lambda as template.yaml deploys it: "
        f"{ARCHITECTURE}, {MEMORY_MB} MB, billed {duration:.1f} ms per heartbeat (p50 "
        "measured in-process against moto; on AWS two DynamoDB round trips take a few ms, so "
        "this overstates it).",
        f"Other Lambda settings (consumer protocol, {size:,} members) at the same billed duration: "
        f"without any duration charge the heartbeat costs {usd(no_duration)} per member-month "
        "(API Gateway, Lambda requests and DynamoDB), so no architecture or memory size brings "
        "it to $1.00. The table assumes the duration does not change with memory; Lambda gives "
        "CPU in proportion to memory, so at less memory the CPU-bound part of a call takes "
        "longer and costs the same GB-seconds: only its wait on DynamoDB gets cheaper.",
        f"Units per heartbeat: the audited figures of {source}, plus the group's periodic "
        "expiry check (one heartbeat per group every session - interval reads every member) "
        "spread over the 2N heartbeats between two checks.",
        f"KCL lease table: one conditional UpdateItem (1 WRU, lease items < 1 KB) per lease every "
        f"{KCL_RENEWAL_S:.1f} s = {usd(lease_month)} per lease-month; KCL runs in the consumers, "
        "so there is no API Gateway or Lambda, and its periodic lease-table scans and "
        "checkpoints are left out (as are groupcoord's offset commits).",
        "groupcoord side of the comparison: the per member-month figure of the measured group "
        "size closest to the deployment's. groupcoord costs per member, KCL per partition: "
        "groupcoord is the cheaper the more partitions each member owns.",
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
