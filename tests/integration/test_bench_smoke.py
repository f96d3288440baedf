"""Every benchmark runner of bench/ at its `--smoke` size, in this process where it can be: the
whole path runs (groups built, calls measured, tables rendered) at a tiny size, and writes
nothing (neither docs/performance.md nor bench/.results). The figures are not checked: a smoke
run's sizes measure nothing; that the run completes and its tables hold what it measured is.

bench.coldstart builds the Lambda layer twice (pip downloads its wheels for a python3.12): it
runs here only with GROUPCOORD_BENCH_SMOKE_COLDSTART=1."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from bench import (
    cost,
    cost_model,
    cost_release,
    kinesis,
    latency,
    load,
    rebalance,
    scale,
    streams,
    streams_failover,
    streams_scale,
    table_growth,
)
from bench.common import DYNAMODB_ENDPOINT_ENV, KINESIS_ENDPOINT_ENV, PERFORMANCE_MD, RESULTS
from groupcoord import runtime


def _written() -> dict[Path, int]:
    """What a run could write: the performance doc and the saved results, by mtime."""
    files = [PERFORMANCE_MD, *(RESULTS.glob("*.json") if RESULTS.exists() else [])]
    return {f: f.stat().st_mtime_ns for f in files}


@pytest.fixture(autouse=True)
def bench_env(dynamodb_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The runners on the session's DynamoDB Local; the runtime they configure put back; and
    nothing written."""
    monkeypatch.setenv(DYNAMODB_ENDPOINT_ENV, dynamodb_endpoint)
    saved = (runtime._settings, runtime._store)
    before = _written()
    try:
        yield
    finally:
        runtime._settings, runtime._store = saved
    assert _written() == before, "a smoke run wrote docs/ or bench/.results"


def test_cost_and_its_pricing(capsys: pytest.CaptureFixture[str]) -> None:
    rows = cost.main(["--smoke"])
    steady = {r.scenario: r for r in rows if r.members == str(cost.SMOKE_SIZE)}
    for scenario in (cost.HEARTBEAT, cost.CONSUMER_HEARTBEAT):
        assert steady[scenario + cost.NOT_DUE].samples, scenario
        assert steady[scenario + cost.DUE].audit_write >= 1, "a due renewal writes"
        assert steady[scenario + cost.NOT_DUE].audit_write == 0, "a renewal not due only reads"
    # bench.cost_model on those rows (its --smoke runs bench.cost --smoke itself).
    dicts = [asdict(r) for r in rows]
    assert cost_model.has_needed_rows(dicts)
    model = cost_model.build_model(dicts, cost_model.SMOKE_SAMPLES)
    text = "\n\n".join(cost_model.report(model, "the smoke run"))
    assert f"classic, {cost.SMOKE_SIZE} members, HTTP API" in text
    assert "**Target: at or under $1.00 per member-month" in text
    printed = capsys.readouterr().out
    assert f"| {cost.HEARTBEAT}{cost.DUE} | {cost.SMOKE_SIZE} | direct |" in printed


def test_latency(capsys: pytest.CaptureFixture[str]) -> None:
    results = latency.main(["--smoke"])
    assert len(results["heartbeat"]["inprocess_ms"]) == 2
    assert len(results["heartbeat"]["http_ms"]) == 2
    assert "| consumer-group-heartbeat |" in capsys.readouterr().out


def test_cost_release() -> None:
    found = cost_release.main(["--smoke"])
    assert [(r.size, r.push) for r in found] == [(3, False), (3, True)]
    assert all(r.calls and r.timed for r in found)


def test_rebalance() -> None:
    phases = rebalance.main(["--smoke"])
    assert {p.protocol for p in phases} == set(rebalance.PROTOCOLS)
    assert not [p.error for p in phases if p.error]
    assert all(p.size == 3 for p in phases)


def test_scale(capsys: pytest.CaptureFixture[str]) -> None:
    results = scale.main(["--smoke"])
    assert dict(results["facts"])["group state at the end (computed from the member items)"] == (
        "Stable"
    )
    assert "BREAKS" not in capsys.readouterr().out


def test_load() -> None:
    data = load.main(["--smoke"])
    assert data["members"] == 4
    assert data["failed"] == 0 and data["refused"] == 0
    assert data["heartbeats_per_s"] > 0 and data["commits_per_s"] > 0


def test_streams(capsys: pytest.CaptureFixture[str]) -> None:
    assert streams.main(["--smoke"]) == 0
    assert "Per member-month: at 10 members streams $" in capsys.readouterr().out


def test_streams_scale(capsys: pytest.CaptureFixture[str]) -> None:
    streams_scale.main(["--smoke"])
    out = capsys.readouterr().out
    assert "members" in out and "endpoint" in out


def test_streams_failover(capsys: pytest.CaptureFixture[str]) -> None:
    assert streams_failover.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "| warm standby (1 replica) | 20 |" in out
    assert "| cold rebuild (0 replicas) | 20 |" in out


def test_table_growth() -> None:
    rows = table_growth.main(["--smoke"])
    assert [r["items"] for r in rows] == [0, 100]
    assert all(r["commit p50"] > 0 for r in rows)


def test_kinesis_cost(
    kinesis_endpoint: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Kinesis run's cost part (the handoff timings start worker processes and wait on
    their sessions: `python -m bench.kinesis --smoke` runs them once)."""
    monkeypatch.setenv(KINESIS_ENDPOINT_ENV, kinesis_endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_KINESIS", kinesis_endpoint)  # main sets it: put back
    kinesis.main(["--smoke", "--cost-only"])
    out = capsys.readouterr().out
    assert "| HTTP API | 1 | $" in out and "| function URL | 16 | $" in out


@pytest.mark.skipif(
    not os.environ.get("GROUPCOORD_BENCH_SMOKE_COLDSTART") or not shutil.which("make"),
    reason="builds the Lambda layer twice (~2 min): GROUPCOORD_BENCH_SMOKE_COLDSTART=1",
)
def test_coldstart(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import coldstart

    coldstart.main(["--smoke"])
    assert "| membership |" in capsys.readouterr().out
