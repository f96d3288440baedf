// The push channel (docs/client-typescript.md, "Push"): its schedule as pure functions (the
// reconnect back-off, the steady interval, a notice's beats on times the test gives), the
// socket against a WebSocket server the test runs (keepalives, pings only after an uncertain
// handshake, reconnects after a close and a drop, closes in order, follows a new member id at
// once when woken), and against
// `groupcoord serve`: a joiner's socket opens as soon as its join is answered, and a handoff
// pushed: a leaver's partitions reach the member that stays within today's 5 s heartbeat
// interval, far within the coordinator's 15 s. The timed step
// starts right after the staying member heartbeated (its share came in an answer, acknowledged
// at once), so without push it would wait its whole interval: the bound is missed without push.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import type { IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type WebSocket as WsSocket, WebSocketServer } from "ws";
import { GroupMember, Transport } from "../src/index.js";
import { sleep } from "../src/timing.js";
import { BACKOFF_CAP_MS, BACKOFF_FIRST_MS, MemberPush, PING_INTERVAL_MS, PushChannel, SECOND_LOOK_MS, handshakeMayLinger, noticeDelayMs, pingPauseMs, reconnectPauseMs, steadyIntervalMs } from "../src/push.js";
import { Polled, Timeline, createTopic, unique, waitUntil } from "./support/group.js";
import { PACKAGE_ROOT, type Server, python, startServe } from "./support/processes.js";

// The coordinator's heartbeat interval: the most it allows, which is what a member with a push
// socket beats at anyway; without push, what the staying member waits.
const INTERVAL_MS = 15_000;
const PING = '{"action":"ping"}';
const KEEPALIVE = '{"action":"keepalive"}';
// Today's default interval: push does it in a few round trips (85 ms measured idle), so the
// bound is generous for 2 busy cores (without push: the interval).
const HANDED_OVER_MS = 5000;
const SETTINGS = {
  "group.consumer.heartbeat.interval.ms": INTERVAL_MS,
  // Installs at once and no initial delay: the timed step is the notice's alone.
  "group.consumer.assignment.interval.ms": 0,
  "group.initial.rebalance.delay.ms": 0,
};

describe("the push schedule", () => {
  it("reconnects back off exponentially with full jitter, capped", () => {
    const cases: Array<[number, number, number]> = [
      [0, 0.9, BACKOFF_FIRST_MS], // a socket that ended in order: the first pause, no jitter
      [1, 1, 400], // a dropped socket counts one failure
      [1, 0.5, 200],
      [1, 0, 0],
      [3, 1, 1600],
      [3, 0.25, 400],
      [7, 1, 25_600],
      [8, 1, BACKOFF_CAP_MS], // 51.2 s, capped
      [8, 0.5, BACKOFF_CAP_MS / 2],
      [10_000, 1, BACKOFF_CAP_MS], // no overflow after a long outage
      [2, 7, 800], // a draw out of range is clamped
      [2, -1, 0],
    ];
    for (const [failures, jitter, pause] of cases) assert.equal(reconnectPauseMs(failures, jitter), pause, `${failures} failures, jitter ${jitter}`);
  });

  it("a failed handshake may have its $connect recorded later unless it was refused (4xx)", () => {
    // 403/404: the function refused it; 429: throttled before any function ran; a 5xx: the
    // function outlived API Gateway's 29 s and may write still; no status: a timeout, a drop.
    const cases: Array<[number | undefined, boolean]> = [[403, false], [404, false], [429, false], [500, true], [504, true], [undefined, true]];
    for (const [status, lingers] of cases) assert.equal(handshakeMayLinger(status), lingers, String(status));
  });

  it("keeps alive about every 9 minutes with jitter, well before API Gateway's 10-minute idle limit", () => {
    const pauses = Array.from({ length: 101 }, (_, draw) => pingPauseMs(PING_INTERVAL_MS, draw / 100));
    assert.ok(Math.abs(Math.min(...pauses) - 518_400) < 1e-6 && Math.abs(Math.max(...pauses) - 561_600) < 1e-6, pauses.join());
    assert.ok(Math.abs(pauses.reduce((a, b) => a + b, 0) / pauses.length - 540_000) < 1e-6); // half the messages of every 5 min
    assert.ok(600_000 - Math.max(...pauses) > 30_000);
    assert.equal(pingPauseMs(PING_INTERVAL_MS, 7), Math.max(...pauses)); // a draw out of range is clamped
  });

  it("heartbeats a third as often only while the socket is open", () => {
    assert.equal(steadyIntervalMs(5000, 15_000, true), 15_000);
    assert.equal(steadyIntervalMs(5000, 15_000, false), 5000);
    assert.equal(steadyIntervalMs(2000, 15_000, true), 6000); // at most 3 intervals
    assert.equal(steadyIntervalMs(15_000, 10_000, true), 15_000); // never more often
  });

  it("a notice asks for a beat at once (or after afterMs) and a second look", () => {
    assert.equal(noticeDelayMs('{"type":"heartbeat","groupId":"g"}'), 0);
    assert.equal(noticeDelayMs('{"type":"heartbeat","groupId":"g","afterMs":1500}'), 1500);
    assert.equal(noticeDelayMs('{"type":"heartbeat","afterMs":-5}'), 0);
    assert.equal(noticeDelayMs('{"type":"pong"}'), undefined);
    assert.equal(noticeDelayMs("not json"), undefined);
    let woken = 0;
    const push = new MemberPush("g", () => "", { enabled: true, intervalMs: 15_000, headersFor: async () => ({}), logger: console, onNotice: () => woken++ });
    push.notice(0, 100_000);
    push.notice(1500, 100_000);
    assert.equal(woken, 2);
    assert.equal(push.nextBeat(), 100_000);
    assert.equal(push.dueBeat(99_900), Infinity);
    assert.equal(push.dueBeat(100_200), 100_000);
    assert.equal(push.dueBeat(100_200), Infinity); // consumed
    assert.equal(push.dueBeat(100_000 + SECOND_LOOK_MS), 100_000 + SECOND_LOOK_MS);
    assert.equal(push.dueBeat(200_000), 101_500); // those due together are one beat
    assert.equal(push.nextBeat(), Infinity);
  });
});

describe("a handoff pushed", () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS, undefined, true);
  });
  after(async () => {
    await serve?.stop();
  });

  it("a leaver's partitions reach the member that stays well within a heartbeat", async () => {
    const topic = unique("push-topic");
    const group = unique("push-group");
    await createTopic(serve.url, topic, 4);
    const timeline = new Timeline();
    const mode = { protocol: "consumer" as const };
    const lines: string[] = []; // the push channel's, shown if the test fails
    const logger = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    const options = { topics: [topic], sessionTimeoutMs: 45_000, logger };
    const leaving = Polled.start(serve.url, group, "leaving", timeline, mode, options);
    let staying: Polled | undefined;
    let took: number;
    try {
      await waitUntil(() => leaving.owned.length === 4, 30_000, "the first member owns all 4");
      staying = Polled.start(serve.url, group, "staying", timeline, mode, options);
      const joined = staying;
      await waitUntil(() => joined.owned.length === 2 && leaving.owned.length === 2, 30_000, "2 partitions each");
      // Its share may come in the beat right after its join, before its socket opened.
      await waitUntil(() => joined.member.pushConnected, 10_000, `the staying member's socket open: ${lines.join("; ")}`);
      const started = performance.now();
      await leaving.close();
      await waitUntil(() => joined.owned.length === 4, 2 * INTERVAL_MS, "the leaver's partitions", 20);
      took = performance.now() - started;
    } finally {
      await leaving.close();
      await staying?.close();
    }
    assert.deepEqual(timeline.overlaps(), []);
    assert.ok(took < HANDED_OVER_MS, `took ${Math.round(took)} ms`);
  });
});

describe("a joiner's socket", () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS, undefined, true);
  });
  after(async () => {
    await serve?.stop();
  });

  it("opens as soon as its join is answered, not at the channel's next look", async () => {
    // Notices posted to a joiner before its socket is open are lost (its share then comes at
    // its second look). The channel's look here is 60 s: only the join's wake opens it in time.
    const topic = unique("push-topic");
    const group = unique("push-group");
    await createTopic(serve.url, topic, 1);
    const joined = new GroupMember(serve.url, group, { topics: [topic], push: false }); // a real member to connect as
    const lines: string[] = [];
    const logger = { info: (m: string) => lines.push(m), warn: (m: string) => lines.push(m) };
    let memberId = "";
    const push = new MemberPush(group, () => memberId, { enabled: true, intervalMs: 15_000, lookMs: 60_000, headersFor: async () => ({}), logger, onNotice: () => undefined });
    try {
      await waitUntil(async () => (await joined.poll(100)).length === 1, 30_000, "the member owns its partition");
      const reply = await new Transport(serve.url).call("find-coordinator", { keyType: 0, coordinatorKeys: [group] });
      push.offer(reply.body.coordinators[0].pushUrl);
      await sleep(200); // the channel is in its 60 s look
      memberId = joined.memberId; // as GroupMember does once its join is answered
      push.memberChanged();
      await waitUntil(() => push.connected, 20_000, `the socket open: ${lines.join("; ")}`);
    } finally {
      await push.close();
      await joined.close();
    }
  });
});

describe("a coordinator without push", () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS, undefined, false);
  });
  after(async () => {
    await serve?.stop();
  });

  it("its member says once that it polls", async () => {
    const topic = unique("push-topic");
    await createTopic(serve.url, topic, 1);
    const lines: string[] = [];
    const logger = { info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`) };
    const member = new GroupMember(serve.url, unique("push-group"), { topics: [topic], logger });
    try {
      await waitUntil(async () => (await member.poll(100)).length === 1, 30_000, "the member owns its partition");
      await member.poll(100);
      assert.equal(member.pushConnected, false);
    } finally {
      await member.close();
    }
    assert.deepEqual(lines.map((l) => l.replace(/group \S+/, "group G")), ["info push: the coordinator offers no push channel (no pushUrl); group G polls at the heartbeat interval"]);
  });
});

describe("the socket against a WebSocket server the test runs", () => {
  // As API Gateway's side: it records what it gets, and closes connections as it does.
  let server: WebSocketServer;
  let url: string;
  const connections: Array<{ query: string; messages: string[]; closedWith?: number; socket: WsSocket; request: IncomingMessage }> = [];
  before(async () => {
    server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
    await new Promise((resolve) => server.once("listening", resolve));
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    server.on("connection", (socket, request) => {
      const seen: (typeof connections)[number] = { query: request.url ?? "", messages: [], socket, request };
      connections.push(seen);
      socket.on("message", (data) => seen.messages.push(data.toString()));
      socket.on("close", (code) => (seen.closedWith = code));
    });
  });
  after(async () => {
    for (const c of connections) c.socket.terminate();
    await new Promise((resolve) => server.close(resolve));
  });

  it("keeps alive, heartbeats at once on a drop and reconnects, and closes in order", async () => {
    const lines: string[] = [];
    const logger = { info: (m: string) => lines.push(`info ${m}`), warn: (m: string) => lines.push(`warn ${m}`) };
    const notices: number[] = [];
    const channel = new PushChannel(url, "g", () => "m-1", (delay) => notices.push(delay), async () => ({}), logger, 100).start();
    try {
      await waitUntil(() => channel.connected, 5000, "connected");
      const first = connections[0] as (typeof connections)[number];
      assert.equal(first.query, "/?groupId=g&memberId=m-1");
      await waitUntil(() => first.messages.length >= 3, 5000, "a keepalive per interval");
      // One-way keepalives only: a clean connect has nothing to reassert (no ping).
      assert.ok(first.messages.every((m) => m === KEEPALIVE), first.messages.join());
      assert.deepEqual(notices, [0]); // a look right after connecting
      first.socket.close(1001); // API Gateway at its 2-hour limit
      await waitUntil(() => connections.length === 2 && channel.connected, 5000, "reconnected after the close");
      assert.deepEqual(notices, [0, 0, 0]); // at the drop, and after reconnecting
      (connections[1] as (typeof connections)[number]).socket.terminate(); // dropped, no close frame
      await waitUntil(() => connections.length === 3 && channel.connected, 5000, "reconnected after the drop");
      (connections[2] as (typeof connections)[number]).socket.send('{"type":"heartbeat","groupId":"g","afterMs":1000}');
      await waitUntil(() => notices.at(-1) === 1000, 5000, "the notice's afterMs");
    } finally {
      await channel.stop();
    }
    await waitUntil(() => connections[2]?.closedWith !== undefined, 5000, "closed");
    assert.equal(connections[2]?.closedWith, 1000); // in order: the coordinator starts no grace
    assert.equal(lines.filter((l) => l.startsWith("warn")).length, 2, lines.join("\n")); // one per drop
    assert.equal(lines.filter((l) => l.includes("connected again")).length, 2, lines.join("\n"));
  });

  // A server that answers the first handshakes as `firstAnswers` says (an HTTP status, or
  // "drop": the TCP connection closed mid-handshake), then opens; it records each opened
  // socket's messages.
  async function answering(firstAnswers: Array<number | "drop">): Promise<{ url: string; handshakes: () => number; opened: string[][]; close: () => Promise<void> }> {
    const answers = [...firstAnswers];
    let handshakes = 0;
    const opened: string[][] = [];
    const sockets: WsSocket[] = [];
    const refusing = new WebSocketServer({
      host: "127.0.0.1",
      port: 0,
      verifyClient: (info, done) => {
        handshakes += 1;
        const answer = answers.shift();
        if (answer === "drop") info.req.socket.destroy();
        else if (answer !== undefined) done(false, answer);
        else done(true);
      },
    });
    await new Promise((resolve) => refusing.once("listening", resolve));
    refusing.on("connection", (socket) => {
      const messages: string[] = [];
      opened.push(messages);
      sockets.push(socket);
      socket.on("message", (data) => messages.push(data.toString()));
    });
    return {
      url: `ws://127.0.0.1:${(refusing.address() as AddressInfo).port}`,
      handshakes: () => handshakes,
      opened,
      close: async () => {
        for (const socket of sockets) socket.terminate();
        await new Promise((resolve) => refusing.close(resolve));
      },
    };
  }

  // A handshake attempt that failed without a clear refusal may have its `$connect` recorded
  // after the retry's: the socket that opens next pings at once and, the stale `$connect`
  // surely finished by then (29 s at most), at its first interval; then keepalives. After
  // refusals only (4xx), no ping at all.
  const uncertain: Array<[string, Array<number | "drop">, number]> = [
    ["a 500 (the function outlived API Gateway's 29 s)", [500], 2],
    ["a connection lost mid-handshake", ["drop"], 2],
    ["refusals only", [403, 429], 0],
    ["an uncertain attempt among refusals", [403, 500, 403], 2],
  ];
  for (const [name, firstAnswers, pings] of uncertain) {
    it(`after ${name}: ${pings ? "a ping at open and at the first interval" : "no ping"}, then keepalives`, async () => {
      const server = await answering(firstAnswers);
      const channel = new PushChannel(server.url, "g", () => "m-1", () => undefined, async () => ({}), { info: () => undefined, warn: () => undefined }, 150).start();
      try {
        await waitUntil(() => (server.opened[0]?.length ?? 0) >= pings + 2, 20_000, "the messages of the socket that opened");
      } finally {
        await channel.stop();
        await server.close();
      }
      assert.equal(server.handshakes(), firstAnswers.length + 1);
      assert.deepEqual(server.opened[0]?.slice(0, pings + 2), [...Array(pings).fill(PING), KEEPALIVE, KEEPALIVE]);
    });
  }

  it("follows a rejoin's new member id at once when woken, not at its next look", async () => {
    let memberId = "m-1";
    const channel = new PushChannel(url, "g", () => memberId, () => undefined, async () => ({}), console, PING_INTERVAL_MS, 60_000).start();
    const before = connections.length;
    try {
      await waitUntil(() => connections.length > before && channel.connected, 5000, "connected as m-1");
      memberId = "m-2"; // a rejoin answered under a new id
      channel.wake();
      await waitUntil(() => connections.length > before + 1 && channel.connected, 20_000, "connected as m-2");
    } finally {
      await channel.stop();
    }
    assert.deepEqual(connections.slice(before).map((c) => c.query), ["/?groupId=g&memberId=m-1", "/?groupId=g&memberId=m-2"]);
    await waitUntil(() => connections[before]?.closedWith !== undefined, 5000, "the first socket closed");
    assert.equal(connections[before]?.closedWith, 1000); // in order: the coordinator starts no grace
  });

  it("signs its handshake for an API with IAM auth: SigV4 of the GET it sends, checked by botocore", async () => {
    const credentials = { AWS_ACCESS_KEY_ID: "AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY: "secret", AWS_SESSION_TOKEN: "token", AWS_REGION: "eu-west-1" };
    const saved = Object.fromEntries(Object.keys(credentials).map((k) => [k, process.env[k]]));
    Object.assign(process.env, credentials);
    const transport = new Transport("https://abc123.execute-api.eu-west-1.amazonaws.com");
    const before = connections.length;
    const member = "m 1/é(x)"; // encoded as SigV4 encodes a query
    const channel = new PushChannel(`${url}/push`, "g+1", () => member, () => undefined, (u) => transport.handshakeHeaders(u), console).start();
    try {
      await waitUntil(() => connections.length > before, 5000, "the handshake");
    } finally {
      await channel.stop();
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    const request = (connections[before] as (typeof connections)[number]).request;
    assert.equal(request.url, "/push?groupId=g%2B1&memberId=m%201%2F%C3%A9%28x%29");
    const headers = request.headers as Record<string, string>;
    assert.match(headers.authorization ?? "", /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, /);
    assert.equal(headers["x-amz-security-token"], "token");
    const input = JSON.stringify({ method: "GET", url: `http://${headers.host}${request.url}`, headers, body: "", accessKey: "AKIDEXAMPLE", secretKey: "secret", region: "eu-west-1" });
    const verdict = JSON.parse(execFileSync(python(), [join(PACKAGE_ROOT, "test", "support", "verify_sigv4.py")], { input, encoding: "utf8" }));
    assert.equal(verdict.got, verdict.expected, "botocore computes another signature");
  });
});
