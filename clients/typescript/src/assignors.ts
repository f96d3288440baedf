// Leader-side assignors of the classic protocol: range, roundrobin, sticky, cooperative-sticky,
// as the Python client's (groupcoord.client.assignors), which follow Kafka's. Each takes the
// members' ConsumerProtocol subscriptions and the partition counts and returns every member's
// partitions. The sticky one keeps what members own where balance allows; cooperative
// (KIP-429), it never moves a partition directly from one owner to another in one round.

import { ConsumerProtocolError, Reader, type Subscription, Writer } from "./consumer-protocol.js";
import { compareTopicPartitions, type TopicPartition } from "./topic-partition.js";

export type Plan = Map<string, TopicPartition[]>;
export type Assignor = (subscriptions: ReadonlyMap<string, Subscription>, partitions: ReadonlyMap<string, number>) => Plan;

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function subscribedTopics(subscriptions: ReadonlyMap<string, Subscription>): string[] {
  const topics = new Set<string>();
  for (const sub of subscriptions.values()) for (const topic of sub.topics) topics.add(topic);
  return [...topics].sort(byString);
}

function emptyPlan(subscriptions: ReadonlyMap<string, Subscription>): Plan {
  return new Map([...subscriptions.keys()].map((member) => [member, []]));
}

/** Per topic, contiguous ranges: n/m partitions each, the first n%m members one more. */
export function assignRange(subscriptions: ReadonlyMap<string, Subscription>, partitions: ReadonlyMap<string, number>): Plan {
  const result = emptyPlan(subscriptions);
  for (const topic of subscribedTopics(subscriptions)) {
    const members = [...subscriptions].filter(([, s]) => s.topics.includes(topic)).map(([m]) => m).sort(byString);
    const count = partitions.get(topic) ?? 0;
    if (members.length === 0 || count === 0) continue;
    const per = Math.floor(count / members.length);
    const extra = count % members.length;
    let start = 0;
    members.forEach((member, i) => {
      const size = per + (i < extra ? 1 : 0);
      for (let p = start; p < start + size; p++) result.get(member)?.push({ topic, partition: p });
      start += size;
    });
  }
  return result;
}

/** All partitions in order, dealt to the members in turn (skipping the unsubscribed). */
export function assignRoundRobin(subscriptions: ReadonlyMap<string, Subscription>, partitions: ReadonlyMap<string, number>): Plan {
  const result = emptyPlan(subscriptions);
  const members = [...subscriptions.keys()].sort(byString);
  let turn = 0;
  for (const topic of subscribedTopics(subscriptions)) {
    for (let p = 0; p < (partitions.get(topic) ?? 0); p++) {
      for (let i = 0; i < members.length; i++) {
        const member = members[turn % members.length] as string;
        turn += 1;
        if (subscriptions.get(member)?.topics.includes(topic)) {
          result.get(member)?.push({ topic, partition: p });
          break;
        }
      }
    }
  }
  return result;
}

/** What each member says it owns, dropping what it cannot keep; a partition claimed by two
 * members goes to the one with the newer generation (neither if they tie). */
function ownedPartitions(subscriptions: ReadonlyMap<string, Subscription>, partitions: ReadonlyMap<string, number>): Plan {
  const claims = new Map<string, { tp: TopicPartition; claimants: Array<[number, string]> }>();
  for (const [member, sub] of subscriptions) {
    for (const [topic, parts] of sub.ownedPartitions) {
      if (!sub.topics.includes(topic)) continue;
      for (const p of parts) {
        if (p < 0 || p >= (partitions.get(topic) ?? 0)) continue;
        const key = JSON.stringify([topic, p]);
        const claim = claims.get(key) ?? { tp: { topic, partition: p }, claimants: [] };
        claim.claimants.push([sub.generationId, member]);
        claims.set(key, claim);
      }
    }
  }
  const owned = emptyPlan(subscriptions);
  for (const { tp, claimants } of claims.values()) {
    claimants.sort((a, b) => b[0] - a[0] || byString(b[1], a[1])); // newest generation first
    const [first, second] = claimants;
    if (first !== undefined && (second === undefined || first[0] > second[0])) owned.get(first[1])?.push(tp);
  }
  return owned;
}

/** Balanced (sizes within one for equal subscriptions), then sticky: members keep what they own
 * up to their share. Cooperative: a partition that changes owner is left out of this round;
 * its old owner revokes it, rejoins, and the next round hands it over. */
export function assignSticky(
  subscriptions: ReadonlyMap<string, Subscription>,
  partitions: ReadonlyMap<string, number>,
  cooperative = false,
): Plan {
  const members = [...subscriptions.keys()].sort(byString);
  if (members.length === 0) return new Map();
  const all: TopicPartition[] = [];
  for (const topic of subscribedTopics(subscriptions)) {
    for (let p = 0; p < (partitions.get(topic) ?? 0); p++) all.push({ topic, partition: p });
  }
  const share = Math.ceil(all.length / members.length); // nobody keeps more than a full share
  const owned = ownedPartitions(subscriptions, partitions);
  const result: Plan = new Map(members.map((m) => [m, [...(owned.get(m) ?? [])].sort(compareTopicPartitions).slice(0, share)]));
  const taken = new Set([...result.values()].flat().map((tp) => JSON.stringify([tp.topic, tp.partition])));
  for (const tp of all.filter((tp) => !taken.has(JSON.stringify([tp.topic, tp.partition])))) {
    const candidates = members.filter((m) => subscriptions.get(m)?.topics.includes(tp.topic));
    const target = candidates.reduce<string | undefined>((best, m) => {
      if (best === undefined) return m;
      return (result.get(m)?.length ?? 0) < (result.get(best)?.length ?? 0) ? m : best; // ties: the first by id
    }, undefined);
    if (target !== undefined) result.get(target)?.push(tp);
  }
  rebalance(result, subscriptions);
  if (cooperative) {
    const previous = new Map<string, string>();
    for (const [m, parts] of owned) for (const tp of parts) previous.set(JSON.stringify([tp.topic, tp.partition]), m);
    for (const [member, parts] of result) {
      result.set(member, parts.filter((tp) => (previous.get(JSON.stringify([tp.topic, tp.partition])) ?? member) === member));
    }
  }
  return new Map([...result].map(([m, parts]) => [m, parts.sort(compareTopicPartitions)]));
}

/** Moves partitions from the fullest to the emptiest eligible member until sizes differ by at
 * most one (for members that can take them). */
function rebalance(result: Plan, subscriptions: ReadonlyMap<string, Subscription>): void {
  const size = (m: string): number => result.get(m)?.length ?? 0;
  for (;;) {
    let moved = false;
    const lows = [...result.keys()].sort((a, b) => size(a) - size(b) || byString(a, b));
    for (const low of lows) {
      const highs = [...result.keys()].sort((a, b) => size(b) - size(a) || byString(a, b));
      for (const high of highs) {
        if (size(high) - size(low) <= 1) break;
        const highParts = result.get(high) ?? [];
        const movable = highParts.filter((tp) => subscriptions.get(low)?.topics.includes(tp.topic));
        const tp = movable[movable.length - 1];
        if (tp !== undefined) {
          highParts.splice(highParts.indexOf(tp), 1);
          result.get(low)?.push(tp);
          moved = true;
          break;
        }
      }
      if (moved) break;
    }
    if (!moved) return;
  }
}

// --- the eager sticky assignor's memory ---
//
// Eager members revoke everything before they join, so their subscription's ownedPartitions is
// empty and the leader would have nothing to stick to. Kafka's StickyAssignor sends the previous
// assignment in the subscription's userData instead (StickyAssignorUserData v1: [topic,
// [partition]] and the generation); so does this client, in the same layout.

export function encodeStickyUserData(partitions: ReadonlyMap<string, number[]>, generation: number): Uint8Array {
  const writer = new Writer().int32(partitions.size);
  for (const topic of [...partitions.keys()].sort(byString)) {
    const parts = [...(partitions.get(topic) ?? [])].sort((a, b) => a - b);
    writer.string(topic).int32(parts.length);
    for (const p of parts) writer.int32(p);
  }
  return writer.int32(generation).bytes();
}

export function decodeStickyUserData(data: Uint8Array): { partitions: Map<string, number[]>; generation: number } {
  try {
    const reader = new Reader(data);
    const partitions = reader.topicPartitions();
    const generation = reader.atEnd ? -1 : reader.int32(); // v0 has no generation
    return { partitions, generation };
  } catch (error) {
    if (error instanceof ConsumerProtocolError || error instanceof RangeError) {
      throw new ConsumerProtocolError(`bad sticky userData: ${error.message}`);
    }
    throw error;
  }
}

/** An eager sticky member's previous assignment (from its userData) as what it owns. */
export function withStickyMemory(sub: Subscription): Subscription {
  if (sub.ownedPartitions.size > 0 || sub.userData === null || sub.userData.length === 0) return sub;
  try {
    const { partitions, generation } = decodeStickyUserData(sub.userData);
    return { ...sub, ownedPartitions: partitions, generationId: generation };
  } catch (error) {
    if (error instanceof ConsumerProtocolError) return sub;
    throw error;
  }
}

export const ASSIGNORS: Readonly<Record<string, Assignor>> = {
  range: assignRange,
  roundrobin: assignRoundRobin,
  sticky: (subs, parts) => assignSticky(subs, parts),
  "cooperative-sticky": (subs, parts) => assignSticky(subs, parts, true),
};

export const COOPERATIVE_ASSIGNORS: ReadonlySet<string> = new Set(["cooperative-sticky"]);
