// One group with Python (groupcoord.client, each in its own process) and TypeScript members,
// for each protocol. With the classic one the leader that computes everyone's assignment is
// first a Python member, then a TypeScript one, each decoding the other's ConsumerProtocol
// subscriptions. Ownership is recorded from both sides' listeners (epoch-ms timestamps of one
// machine clock); at no time is a partition held by two members.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { TopicPartition } from "../src/index.js";
import {
  CLASSIC_HEARTBEAT_MS,
  CLASSIC_REBALANCE_MS,
  CLASSIC_SESSION_MS,
  CONSUMER_SESSION_MS,
  CONVERGE_MS,
  type OwnershipEvent,
  Polled,
  type ProtocolMode,
  SETTINGS,
  Timeline,
  allPartitions,
  balanced,
  createTopic,
  memberIds,
  unique,
  waitUntil,
} from "./support/group.js";
import { JsonLinesProcess, PACKAGE_ROOT, type Server, python, startServe } from "./support/processes.js";
import { ownedBy, settle } from "./support/scenarios.js";

const PARTITIONS = 8;

function pythonMember(url: string, group: string, topic: string, mode: ProtocolMode, name: string): JsonLinesProcess {
  const classic = mode.protocol === "classic";
  const config = {
    url,
    group,
    topics: [topic],
    protocol: mode.protocol,
    assignors: classic ? mode.assignors : undefined,
    sessionTimeoutMs: classic ? CLASSIC_SESSION_MS : CONSUMER_SESSION_MS,
    heartbeatIntervalMs: CLASSIC_HEARTBEAT_MS,
    rebalanceTimeoutMs: CLASSIC_REBALANCE_MS,
    clientId: name,
  };
  return new JsonLinesProcess(python(), [join(PACKAGE_ROOT, "test", "support", "python_member.py"), JSON.stringify(config)]);
}

/** The TypeScript members' events and the Python members' lines, as one timeline. */
function combined(timeline: Timeline, pythons: Map<string, JsonLinesProcess>): Timeline {
  const all = new Timeline();
  all.events.push(...timeline.events);
  for (const [member, child] of pythons) {
    for (const m of child.messages) {
      if (m.kind === undefined) continue;
      all.events.push({ at: m.at as number, member, kind: m.kind as OwnershipEvent["kind"], partitions: m.partitions as TopicPartition[] });
    }
  }
  return all;
}

async function mixedGroupConverges(url: string, mode: ProtocolMode): Promise<void> {
  const topic = unique("mixed");
  const group = unique("polyglot");
  await createTopic(url, topic, PARTITIONS);
  const everything = allPartitions(topic, PARTITIONS);
  const timeline = new Timeline();
  const pythons = new Map<string, JsonLinesProcess>();
  const typescript: Polled[] = [];
  const errors = (): string[] => [...pythons.values()].flatMap((p) => p.messages.filter((m) => m.pollError).map((m) => String(m.pollError)));
  try {
    // 1. A Python member alone takes everything (with the classic protocol: the leader).
    pythons.set("py-1", pythonMember(url, group, topic, mode, "py-1"));
    const py1 = pythons.get("py-1") as JsonLinesProcess;
    await waitUntil(() => ownedBy(py1).length === PARTITIONS, CONVERGE_MS, "the Python member owns every partition");
    // 2. Two TypeScript members join: three members balanced, 3 / 3 / 2.
    for (const name of ["ts-1", "ts-2"]) typescript.push(Polled.start(url, group, name, timeline, mode, { topics: [topic] }));
    const owners = (): TopicPartition[][] => [...[...pythons.values()].filter((p) => p.exitCode === null).map(ownedBy), ...typescript.map((t) => t.owned)];
    await waitUntil(() => balanced(owners(), everything), CONVERGE_MS, "Python and TypeScript members balanced");
    await settle(combined(timeline, pythons));
    // 3. The Python member leaves: the TypeScript members take its partitions (and lead).
    await py1.stop();
    assert.ok(py1.find((m) => m.closed === true), py1.log());
    await waitUntil(() => balanced(owners(), everything), CONVERGE_MS, "the TypeScript members took the Python member's partitions");
    // 4. Another Python member joins a group a TypeScript member leads.
    pythons.set("py-2", pythonMember(url, group, topic, mode, "py-2"));
    const py2 = pythons.get("py-2") as JsonLinesProcess;
    await waitUntil(() => ownedBy(py2).length > 0 && balanced(owners(), everything), CONVERGE_MS, "the new Python member got its share");
    await settle(combined(timeline, pythons));
    assert.ok(balanced(owners(), everything));
    const pyId = py2.messages.filter((m) => m.kind === "assigned").at(-1)?.memberId;
    const ids = [pyId as string, ...typescript.map((t) => t.member.memberId)];
    assert.deepEqual(await memberIds(url, group, mode.protocol), [...ids].sort(), "the coordinator's members");
    assert.deepEqual(combined(timeline, pythons).overlaps(), [], "a partition was held by two members at once");
    assert.deepEqual(errors(), []);
    for (const t of typescript) assert.deepEqual(t.errors.map(String), []);
  } finally {
    await Promise.all([...typescript.map((t) => t.close()), ...[...pythons.values()].map((p) => p.stop())]);
  }
}

describe("a group of Python and TypeScript members", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("consumer protocol: converges with no partition held twice", () => mixedGroupConverges(serve.url, { protocol: "consumer" }));
  it("classic cooperative-sticky: Python and TypeScript leaders assign each other, no partition held twice", () =>
    mixedGroupConverges(serve.url, { protocol: "classic", assignors: ["cooperative-sticky"] }));
});
