"""The pricing model: AWS list prices, and what a heartbeat's units and billed duration and a
group's timer checks cost per member-month. Pure arithmetic, no I/O and no measurement: the
runners (bench/cost_model.py, bench/streams.py, bench/kinesis_cost.py) measure the figures and
price them here; tests/unit/test_bench_pricing.py checks the arithmetic.

A steady heartbeat writes the member's session deadline only when it is less than one session
away (`groupcoord.session.renewal.skips`, core/session_renewal.py): of every skips + 1 steady
heartbeats one renews and the others only read, so the model takes (skips x not due + due) /
(skips + 1) of each figure. Each group also pays for its periodic expiry check (classic) or scan
(consumer protocol), once per check interval: a cost per group, spread over its members.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from groupcoord.client.push import PING_INTERVAL_S
from groupcoord.core.session_renewal import (
    CONNECTED_INTERVAL_FACTOR,
    CONNECTED_MAX_SLACK_SHARE,
    effective_skips,
)
from groupcoord.settings import Settings

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
    "API Gateway WebSocket, per connection-minute": 0.25 / 1e6,
    "API Gateway WebSocket, per message (32 KB each)": 1.00 / 1e6,
}
API_GATEWAY = PRICES["API Gateway HTTP API, per request (first 300 M / month)"]
FUNCTION_URL = PRICES["Lambda function URL, per request (beyond Lambda's own charges)"]
# template.yaml's FrontDoor values -> (name in the tables, $ per request of the front door).
HTTP_API_DOOR, FUNCTION_URL_DOOR = "HTTP API", "function URL"
FRONT_DOORS = {HTTP_API_DOOR: API_GATEWAY, FUNCTION_URL_DOOR: FUNCTION_URL}
LAMBDA_REQUEST = PRICES["Lambda, per request"]
WRU = PRICES["DynamoDB on-demand, per write request unit"]
RRU = PRICES["DynamoDB on-demand, per read request unit"]
WEBSOCKET_MINUTE = PRICES["API Gateway WebSocket, per connection-minute"]
WEBSOCKET_MESSAGE = PRICES["API Gateway WebSocket, per message (32 KB each)"]
HEARTBEAT_S = 5.0
MONTH_S = 30 * 24 * 3600
KCL_RENEWAL_S = 10.0 / 3  # KCL: failoverTimeMillis 10 s, renewals every third of it
FULL_VCPU_MB = 1769  # Lambda: a function gets one vCPU's worth of CPU at this memory size
TARGET_USD = 1.00  # issue #31's target: $ per member-month at a 5 s heartbeat (HTTP API)
CLASSIC, CONSUMER = "classic", "consumer protocol"
STREAMS = "streams"  # bench/streams.py's rows, priced with this model's functions
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
# Units of a call: (read units, write units incl. GSI).
Units = tuple[float, float]

# The push channel (docs/sessions.md, "Push"): a connected member heartbeats every 15 s (the
# client's push_heartbeat_interval_ms), sends a keepalive about every 9 min (the clients' mean
# pause; API Gateway closes a connection idle for 10; a keepalive is one message in, answered by
# API Gateway itself: no function, no DynamoDB, nothing back), reconnects every 2 h (API
# Gateway's limit: a $disconnect and a $connect), and heartbeats at once and a second later on
# each notice; notices go out only on change: the model assumes PUSH_NOTICES_PER_MONTH of them
# per member (one an hour), and shows what more would add. A ping (a message in, its pong out
# and a push-function invocation) goes only after a handshake that failed without a refusal
# (two, on the next socket): none in a steady month.
PUSH_HEARTBEAT_S = 15.0
PUSH_KEEPALIVE_S = PING_INTERVAL_S
PUSH_PINGS_PER_MONTH = 0.0
PUSH_RECONNECT_S = 2 * 3600.0
NOTICE_BEATS = 2
PUSH_NOTICES_PER_MONTH = 720.0


@dataclass(frozen=True)
class LambdaSetting:
    """A function's architecture and memory size: what its billed duration costs."""

    architecture: str
    memory_mb: int

    @property
    def gb_s_price(self) -> float:
        return PRICES[f"Lambda, per GB-second ({self.architecture})"]

    @property
    def memory_gb(self) -> float:
        return self.memory_mb / 1024


def check_interval_s(
    protocol: str, skips: int, session_s: float | None = None, interval_s: float | None = None
) -> float:
    """Seconds between two of a steady group's timer checks. A check sets the group's next one
    (`dl`) to its earliest session deadline. With skips 0 each heartbeat writes last beat +
    session, so right after a check the earliest deadline lies about session - interval ahead
    (some member is about to heartbeat). With skips >= 1 a renewal writes now + session +
    (skips + 1/2) intervals and the member renews again at its first heartbeat that finds its
    deadline less than a session ahead, so a deadline lies between session - interval/2 and
    session + (skips + 1/2) intervals ahead: the earliest of many members whose renewals are
    spread over the cycle is about session - interval/2 ahead; members renewing in step
    (after a rebalance each renews on its first heartbeat) leave up to a session between
    checks. The model takes session - interval/2, the more frequent case. `session_s`,
    `interval_s`: another session or heartbeat interval than the protocol's default."""
    session = SESSION_S[protocol] if session_s is None else session_s
    interval = INTERVAL_S[protocol] if interval_s is None else interval_s
    return session - interval * (0.5 if skips else 1.0)


def blended(not_due: dict[int, Units], due: dict[int, Units], skips: int) -> dict[int, Units]:
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


def check_month(check: Check, interval_s: float, setting: LambdaSetting) -> dict[str, float]:
    """$ per group-month of a group's timer checks, one every `interval_s`: what each adds to
    its heartbeat (units, and handler time billed as Lambda duration)."""
    per_month = MONTH_S / interval_s
    return {
        "Lambda duration": per_month * check.seconds * setting.memory_gb * setting.gb_s_price,
        "DynamoDB writes": per_month * check.write * WRU,
        "DynamoDB reads": per_month * check.read * RRU,
    }


def per_heartbeat(
    read_units: float,
    write_units: float,
    duration_ms: float,
    setting: LambdaSetting,
    front_door: float = API_GATEWAY,
) -> dict[str, float]:
    """$ of one heartbeat, by line: its front door and Lambda request, its billed duration, its
    DynamoDB units."""
    return {
        "front door": front_door,
        "Lambda requests": LAMBDA_REQUEST,
        "Lambda duration": duration_ms / 1000 * setting.memory_gb * setting.gb_s_price,
        "DynamoDB writes": write_units * WRU,
        "DynamoDB reads": read_units * RRU,
    }


@dataclass(frozen=True)
class PushCall:
    """A push-channel call measured: read and write units (incl. GSI) and handler ms."""

    read: float
    write: float
    ms: float


@dataclass(frozen=True)
class PushCalls:
    """The push function's routes (a `$connect`, a `ping`, a `$disconnect`), and what posting
    one notice adds to the request that sends it (its reads of the connection; the post's
    time). A keepalive reaches no function: nothing to measure."""

    connect: PushCall
    ping: PushCall
    disconnect: PushCall
    notice: PushCall


def push_channel_month(
    calls: PushCalls, setting: LambdaSetting, notices: float = PUSH_NOTICES_PER_MONTH
) -> dict[str, float]:
    """$ per member-month of the push channel itself, beside the heartbeats: the connection's
    minutes, its messages (each keepalive, each ping and its pong, each notice), and the push
    function's invocations (pings, a $connect and a $disconnect per reconnect) with their
    DynamoDB units, and each notice's cost to its sender."""
    keepalives = MONTH_S / PUSH_KEEPALIVE_S
    pings = PUSH_PINGS_PER_MONTH
    connections = MONTH_S / PUSH_RECONNECT_S
    invoked = (
        (pings, calls.ping),
        (connections, calls.connect),
        (connections, calls.disconnect),
        (notices, calls.notice),
    )
    seconds = sum(n * c.ms for n, c in invoked) / 1000
    return {
        "WebSocket connection-minutes": MONTH_S / 60 * WEBSOCKET_MINUTE,
        "WebSocket messages": (keepalives + 2 * pings + notices) * WEBSOCKET_MESSAGE,
        # A notice rides on its sender's invocation: no request of its own.
        "push: Lambda": (pings + 2 * connections) * LAMBDA_REQUEST
        + seconds * setting.memory_gb * setting.gb_s_price,
        "push: DynamoDB": sum(n * (c.read * RRU + c.write * WRU) for n, c in invoked),
    }


def kcl_lease_month() -> float:
    """$ per lease-month of a KCL lease table: one 1-WRU conditional write per renewal."""
    return MONTH_S / KCL_RENEWAL_S * WRU


@dataclass(frozen=True)
class Model:
    """The figures measured per protocol, priced: per group size the units of a steady
    heartbeat (renewal not due, due), what one timer check adds, and the steady heartbeat's
    billed times; `setting` is the Lambda the figures are priced at unless told otherwise."""

    measured: dict[str, tuple[dict[int, Units], dict[int, Units]]]
    checks: dict[str, dict[int, Check]]
    durations: dict[str, SteadyTimes]
    setting: LambdaSetting
    beats_per_month: float = field(default=MONTH_S / HEARTBEAT_S)
    push: PushCalls | None = None  # the push channel's calls, when measured

    def sizes(self, protocol: str) -> list[int]:
        """The group sizes measured both ways and with a timer check."""
        not_due, due = self.measured[protocol]
        return sorted(set(not_due) & set(due) & set(self.checks[protocol]))

    def duration_ms(self, protocol: str, skips: int) -> float:
        """The billed duration of the average steady heartbeat at `skips`."""
        return self.durations[protocol].billed_ms(skips)

    def timer_month(
        self,
        protocol: str,
        members: int,
        skips: int,
        setting: LambdaSetting | None = None,
        session_s: float | None = None,
    ) -> dict[str, float]:
        """$ per group-month of the group's timer checks: what each adds to its heartbeat
        (units, and handler time billed as Lambda duration), once per check interval."""
        interval_s = check_interval_s(protocol, skips, session_s)
        return check_month(self.checks[protocol][members], interval_s, setting or self.setting)

    def units(self, protocol: str, members: int, skips: int) -> Units:
        """(read, write) units of the average heartbeat, the group's timer checks included:
        one check's units spread over the heartbeats between two checks."""
        read, write = blended(*self.measured[protocol], skips)[members]
        check = self.checks[protocol][members]
        between = members * check_interval_s(protocol, skips) / HEARTBEAT_S
        return read + check.read / between, write + check.write / between

    def steady_month(
        self, protocol: str, members: int, skips: int, setting: LambdaSetting | None = None
    ) -> dict[str, float]:
        """$ per member-month of steady heartbeats alone (no timer checks)."""
        read, write = blended(*self.measured[protocol], skips)[members]
        duration = self.duration_ms(protocol, skips)
        parts = per_heartbeat(read, write, duration, setting or self.setting)
        return {k: v * self.beats_per_month for k, v in parts.items()}

    def month(
        self,
        protocol: str,
        members: int,
        skips: int,
        setting: LambdaSetting | None = None,
        session_s: float | None = None,
    ) -> dict[str, float]:
        """$ per member-month: steady heartbeats plus the member's share of the timer checks."""
        costs = self.steady_month(protocol, members, skips, setting)
        timers = self.timer_month(protocol, members, skips, setting, session_s)
        for k, v in timers.items():
            costs[k] += v / members
        return costs

    def push_skips(self, protocol: str) -> int:
        """The skips a connected member's heartbeats get at PUSH_HEARTBEAT_S: the default
        setting, or fewer where their slack would pass a connected member's share of the
        session (core/session_renewal.py: its crash is seen by the disconnect, so up to a
        whole session; 2 at 15 s and 45 s), as the coordinator reckons it: on
        CONNECTED_INTERVAL_FACTOR of its own interval."""
        session_ms = int(SESSION_S[protocol] * 1000)
        stretched_ms = int(CONNECTED_INTERVAL_FACTOR * INTERVAL_S[protocol] * 1000)
        assert stretched_ms == int(PUSH_HEARTBEAT_S * 1000), "the client's interval changed"
        return effective_skips(
            stretched_ms, _DEFAULTS.session_renewal_skips, session_ms, CONNECTED_MAX_SLACK_SHARE
        )

    def push_month(
        self,
        protocol: str,
        members: int,
        front_door: float,
        notices: float = PUSH_NOTICES_PER_MONTH,
        skips: int | None = None,
    ) -> dict[str, float]:
        """$ per member-month of a member on the push channel: its heartbeats every
        PUSH_HEARTBEAT_S and those its notices bring, its share of the group's timer checks
        (a check every session - interval), and the channel itself (push_channel_month).
        `skips`: renewals skipped as if that many fitted (default: push_skips, what does)."""
        assert self.push is not None, "the push channel's calls were not measured"
        skips = self.push_skips(protocol) if skips is None else skips
        read, write = blended(*self.measured[protocol], skips)[members]
        beat = per_heartbeat(
            read, write, self.duration_ms(protocol, skips), self.setting, front_door
        )
        beats = MONTH_S / PUSH_HEARTBEAT_S + NOTICE_BEATS * notices
        costs = {k: v * beats for k, v in beat.items()}
        interval_s = check_interval_s(protocol, skips, interval_s=PUSH_HEARTBEAT_S)
        for k, v in check_month(self.checks[protocol][members], interval_s, self.setting).items():
            costs[k] += v / members
        return costs | push_channel_month(self.push, self.setting, notices)

    def total(self, protocol: str, members: int, skips: int) -> float:
        """$ per member-month behind the HTTP API, timer checks included."""
        return sum(self.month(protocol, members, skips).values())

    def break_even_ms(self, protocol: str, members: int, skips: int) -> tuple[float, float]:
        """(the average billed duration of a steady heartbeat at which a member-month costs
        TARGET_USD, what it costs without that duration): the duration is <= 0 when the rest
        alone is over the target."""
        ms_price = self.beats_per_month * self.setting.memory_gb * self.setting.gb_s_price / 1000
        steady_duration = self.steady_month(protocol, members, skips)["Lambda duration"]
        rest = self.total(protocol, members, skips) - steady_duration
        return (TARGET_USD - rest) / ms_price, rest


@dataclass(frozen=True)
class GroupFit:
    """A group's timer checks per group-month fitted as `fixed` + `slope` per member, and the
    steady heartbeats' cost per member-month: from which size a member-month meets the
    target."""

    fixed: float
    slope: float
    steady: float

    @classmethod
    def of(cls, group: dict[int, float], steady: float) -> GroupFit:
        """Fitted on the smallest and largest sizes of `group` (members -> $ per group-month)."""
        small, large = min(group), max(group)
        slope = (group[large] - group[small]) / (large - small)
        return cls(fixed=group[small] - slope * small, slope=slope, steady=steady)

    @property
    def per_member(self) -> float:
        """What each member pays however large the group: its heartbeats and its check part."""
        return self.steady + self.slope

    def target_from(self) -> float | None:
        """The group size from which a member-month is at or under the target (None: never,
        the per-member part alone is over; 0: at any size, the checks have no fixed part)."""
        if self.per_member > TARGET_USD:
            return None
        if self.fixed <= 0:
            return 0.0
        return self.fixed / (TARGET_USD - self.steady - self.slope)
