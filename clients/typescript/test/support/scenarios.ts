// The group scenarios every protocol goes through (consumer-protocol.test.ts,
// classic-protocol.test.ts), as users run members: each against a live `groupcoord serve`,
// with its own group and topic.

import assert from "node:assert/strict";
import { join } from "node:path";
import { CommitFailed, type GroupMemberOptions, type TopicPartition } from "../../src/index.js";
import {
  CLASSIC_HEARTBEAT_MS,
  CLASSIC_SESSION_MS,
  CONSUMER_SESSION_MS,
  CONVERGE_MS,
  Polled,
  type ProtocolMode,
  QUIET_MS,
  Timeline,
  allPartitions,
  balanced,
  createTopic,
  key,
  memberIds,
  unique,
  waitUntil,
} from "./group.js";
import { JsonLinesProcess, PACKAGE_ROOT } from "./processes.js";

const PARTITIONS = 6;

function sessionMs(mode: ProtocolMode): number {
  return mode.protocol === "classic" ? CLASSIC_SESSION_MS : CONSUMER_SESSION_MS;
}

function sorted(partitions: TopicPartition[]): string[] {
  return partitions.map(key).sort();
}

/** Waits until no listener was called for QUIET_MS: a rebalance still moving partitions (a
 * cooperative round's follow-up) would have called one. */
export async function settle(timeline: Timeline): Promise<void> {
  await waitUntil(() => Date.now() - timeline.lastEventAt() > QUIET_MS, CONVERGE_MS, "no rebalance for a while", 100);
}

function noErrors(members: Polled[]): void {
  for (const m of members) assert.deepEqual(m.errors.map(String), [], `poll() of ${m.name} failed`);
}

async function closeAll(members: Polled[]): Promise<void> {
  await Promise.all(members.map((m) => m.close()));
}

/** Two members share a topic: the first takes everything, the second's arrival rebalances
 * it 3 / 3 without any partition held by both at any time, and each sees the other's
 * commits. */
export async function twoMembersShareATopic(url: string, mode: ProtocolMode): Promise<void> {
  const topic = unique("orders");
  const group = unique("share");
  await createTopic(url, topic, PARTITIONS);
  const everything = allPartitions(topic, PARTITIONS);
  const timeline = new Timeline();
  const a = Polled.start(url, group, "a", timeline, mode, { topics: [topic] });
  const members = [a];
  try {
    await waitUntil(() => a.owned.length === PARTITIONS, CONVERGE_MS, "the first member owns every partition");
    const b = Polled.start(url, group, "b", timeline, mode, { topics: [topic] });
    members.push(b);
    await waitUntil(() => balanced([a.owned, b.owned], everything), CONVERGE_MS, "two members balanced");
    await settle(timeline);
    assert.ok(balanced([a.owned, b.owned], everything));
    assert.deepEqual(timeline.overlaps(), [], "a partition was held by both members at once");
    const revoked = timeline.events.filter((e) => e.member === "a" && e.kind === "revoked").flatMap((e) => e.partitions);
    const eager = mode.protocol === "classic" && !mode.assignors[0]?.startsWith("cooperative");
    // Incremental protocols revoke only what moves; eager ones everything, first.
    assert.deepEqual(sorted(revoked), eager ? sorted(everything) : sorted(b.owned));

    await a.member.commit(a.owned.map((tp) => ({ ...tp, offset: 100 + tp.partition })));
    // commitAsync() calls land in call order: the last one's offsets stay.
    await Promise.all([1, 2, 3].map((k) => a.member.commitAsync(a.owned.map((tp) => ({ ...tp, offset: 100 * k + tp.partition })))));
    const seen = await b.member.committed(everything);
    const aOwns = new Set(a.owned.map(key));
    assert.deepEqual(
      seen,
      everything.map((tp) => ({ ...tp, offset: aOwns.has(key(tp)) ? 300 + tp.partition : null })),
    );
    noErrors(members);
  } finally {
    await closeAll(members);
  }
}

function memberProcess(url: string, group: string, options: GroupMemberOptions): JsonLinesProcess {
  const script = join(PACKAGE_ROOT, "dist", "test", "support", "member-process.js");
  return new JsonLinesProcess(process.execPath, [script, JSON.stringify({ url, group, options })]);
}

/** What a member process owns, from its listener's lines. */
export function ownedBy(child: JsonLinesProcess): TopicPartition[] {
  const owned = new Map<string, TopicPartition>();
  for (const m of child.messages) {
    const partitions = (m.partitions ?? []) as TopicPartition[];
    if (m.kind === "assigned") for (const tp of partitions) owned.set(key(tp), tp);
    if (m.kind === "revoked" || m.kind === "lost") for (const tp of partitions) owned.delete(key(tp));
  }
  return [...owned.values()];
}

function modeOptions(mode: ProtocolMode, topic: string): GroupMemberOptions {
  return mode.protocol === "classic"
    ? { topics: [topic], protocol: "classic", assignors: mode.assignors, sessionTimeoutMs: CLASSIC_SESSION_MS, heartbeatIntervalMs: CLASSIC_HEARTBEAT_MS }
    : { topics: [topic], sessionTimeoutMs: CONSUMER_SESSION_MS };
}

/** A member frozen past its session timeout (SIGSTOP, its own process) loses its partitions
 * to the other; woken, its commit is fenced (CommitFailed) and changes nothing. */
export async function aFrozenMembersCommitIsFenced(url: string, mode: ProtocolMode): Promise<void> {
  const topic = unique("payments");
  const group = unique("zombie");
  await createTopic(url, topic, PARTITIONS);
  const everything = allPartitions(topic, PARTITIONS);
  const zombie = memberProcess(url, group, { ...modeOptions(mode, topic), clientId: "zombie" });
  const timeline = new Timeline();
  const b = Polled.start(url, group, "b", timeline, mode, { topics: [topic] });
  try {
    await waitUntil(() => balanced([ownedBy(zombie), b.owned], everything), CONVERGE_MS, "two members balanced");
    await settle(timeline);
    const orphaned = ownedBy(zombie);
    zombie.send({ cmd: "commit", offset: 10 });
    await waitUntil(() => zombie.find((m) => m.commit !== undefined), CONVERGE_MS, "the member's commit");
    assert.equal(zombie.find((m) => m.commit !== undefined)?.commit, "ok", zombie.log());

    const since = zombie.messages.length;
    zombie.send({ cmd: "freeze-then-commit", offset: 999 });
    await waitUntil(() => zombie.find((m) => m.frozen !== undefined, since), CONVERGE_MS, "the member froze");
    const frozenAt = Date.now();
    await waitUntil(() => b.owned.length === PARTITIONS, sessionMs(mode) + CONVERGE_MS, "the frozen member's partitions reached the other");
    // Not before the session timeout (less a heartbeat interval and a second of latency): the
    // coordinator's failure detector moved them.
    assert.ok(Date.now() - frozenAt >= sessionMs(mode) - 1500, `moved after ${Date.now() - frozenAt} ms`);
    assert.deepEqual(await b.member.committed(orphaned), orphaned.map((tp) => ({ ...tp, offset: 10 })));
    await b.member.commit(everything.map((tp) => ({ ...tp, offset: 20 })));

    zombie.signal("SIGCONT");
    const verdict = await waitUntil(() => zombie.find((m) => m.commit !== undefined, since), CONVERGE_MS, "the zombie's commit");
    assert.equal(verdict.commit, "failed", zombie.log());
    assert.equal(verdict.errorClass, CommitFailed.name);
    assert.deepEqual(await b.member.committed(everything), everything.map((tp) => ({ ...tp, offset: 20 })));
    assert.deepEqual(timeline.events.filter((e) => e.kind === "lost"), [], "the live member lost its partitions");
    noErrors([b]);
  } finally {
    await zombie.stop();
    await b.close();
  }
}

/** close() leaves: the member is gone from the group at once and its partitions reach the
 * other member well before a session timeout would have freed them. */
export async function closeHandsOverAtOnce(url: string, mode: ProtocolMode): Promise<void> {
  const topic = unique("shipments");
  const group = unique("leave");
  await createTopic(url, topic, PARTITIONS);
  const everything = allPartitions(topic, PARTITIONS);
  const timeline = new Timeline();
  const a = Polled.start(url, group, "a", timeline, mode, { topics: [topic] });
  const b = Polled.start(url, group, "b", timeline, mode, { topics: [topic] });
  try {
    await waitUntil(() => balanced([a.owned, b.owned], everything), CONVERGE_MS, "two members balanced");
    await settle(timeline);
    const leaver = a.member.memberId;
    const closedAt = Date.now();
    await a.close();
    assert.ok(!(await memberIds(url, group, mode.protocol)).includes(leaver), "the closed member is still listed");
    await waitUntil(() => b.owned.length === PARTITIONS, CONVERGE_MS, "the closed member's partitions reached the other");
    const took = Date.now() - closedAt;
    assert.ok(took < sessionMs(mode), `the hand-over took ${took} ms, as long as a session timeout`);
    assert.deepEqual(timeline.overlaps(), []);
    noErrors([a, b]);
  } finally {
    await closeAll([a, b]);
  }
}

/** A static member (instanceId) that restarts within its session timeout gets its partitions
 * back, and the other member is never asked to give anything up. */
export async function aStaticMemberRestartsWithoutARebalance(url: string, mode: ProtocolMode): Promise<void> {
  const topic = unique("invoices");
  const group = unique("static");
  await createTopic(url, topic, PARTITIONS);
  const everything = allPartitions(topic, PARTITIONS);
  const timeline = new Timeline();
  const first = Polled.start(url, group, "first", timeline, mode, { topics: [topic], instanceId: "host-1" });
  const other = Polled.start(url, group, "other", timeline, mode, { topics: [topic], instanceId: "host-2" });
  const members = [first, other];
  try {
    await waitUntil(() => balanced([first.owned, other.owned], everything), CONVERGE_MS, "two static members balanced");
    await settle(timeline);
    const kept = sorted(first.owned);
    await first.close(); // a static member leaves only temporarily
    const restartedAt = Date.now();
    const back = Polled.start(url, group, "back", timeline, mode, { topics: [topic], instanceId: "host-1" });
    members.push(back);
    await waitUntil(() => back.owned.length > 0, CONVERGE_MS, "the restarted member owns partitions");
    assert.deepEqual(sorted(back.owned), kept, "the restarted member did not get its old partitions back");
    // Several of the other's heartbeats go by: a rebalance would have reached it.
    await new Promise((r) => setTimeout(r, 3 * (mode.protocol === "classic" ? CLASSIC_HEARTBEAT_MS : 200) + QUIET_MS));
    assert.deepEqual(timeline.since(restartedAt, "other"), [], "the other member was rebalanced");
    assert.ok(balanced([back.owned, other.owned], everything));
    noErrors(members);
  } finally {
    await closeAll(members);
  }
}

/** A pattern subscription takes the topics that match, and one created later too. */
export async function aPatternPicksUpANewTopic(url: string, mode: ProtocolMode): Promise<void> {
  const prefix = unique("metrics");
  const group = unique("pattern");
  await createTopic(url, `${prefix}-cpu`, 2);
  await createTopic(url, `other-${prefix}`, 2);
  const timeline = new Timeline();
  const m = Polled.start(url, group, "m", timeline, mode, { pattern: `${prefix}-.*`, ...(mode.protocol === "classic" ? { metadataRefreshMs: 300 } : {}) });
  try {
    await waitUntil(() => m.owned.length === 2, CONVERGE_MS, "the matching topic's partitions");
    await createTopic(url, `${prefix}-disk`, 3);
    const expected = [...allPartitions(`${prefix}-cpu`, 2), ...allPartitions(`${prefix}-disk`, 3)];
    await waitUntil(() => sorted(m.owned).join() === sorted(expected).join(), CONVERGE_MS, "the new topic's partitions too");
    noErrors([m]);
  } finally {
    await m.close();
  }
}
