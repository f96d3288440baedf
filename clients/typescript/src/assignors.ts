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

/** Static members first, by groupInstanceId, then dynamic ones by member id (Kafka's
 * MemberInfo order): a static member that restarts with a new member id keeps its place. */
function memberOrder(subscriptions: ReadonlyMap<string, Subscription>): string[] {
  const key = (m: string): [number, string] => {
    const instance = subscriptions.get(m)?.groupInstanceId;
    return instance ? [0, instance] : [1, m];
  };
  return [...subscriptions.keys()].sort((a, b) => compareTuples(key(a), key(b)));
}

/** Per topic, contiguous ranges: n/m partitions each, the first n%m members one more. */
export function assignRange(subscriptions: ReadonlyMap<string, Subscription>, partitions: ReadonlyMap<string, number>): Plan {
  const result = emptyPlan(subscriptions);
  const order = memberOrder(subscriptions);
  for (const topic of subscribedTopics(subscriptions)) {
    const members = order.filter((m) => subscriptions.get(m)?.topics.includes(topic));
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
  const members = memberOrder(subscriptions);
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

// --- sticky and cooperative-sticky (the same algorithm as the Python client's) ---

type Key = string;
const keyOf = (tp: TopicPartition): Key => `${tp.topic}\u0000${tp.partition}`;
const total = (plan: Plan): number => [...plan.values()].reduce((sum, parts) => sum + parts.length, 0);

/** A min-heap of tuples compared element by element. */
class Heap<T extends ReadonlyArray<number | string>> {
  private readonly items: T[] = [];

  constructor(items: Iterable<T> = []) {
    for (const item of items) this.push(item);
  }

  get size(): number {
    return this.items.length;
  }

  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const items = this.items;
    items.push(item);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (compareTuples(items[i] as T, items[parent] as T) >= 0) break;
      [items[i], items[parent]] = [items[parent] as T, items[i] as T];
      i = parent;
    }
  }

  pop(): T | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0 && last !== undefined) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        const right = left + 1;
        let smallest = i;
        if (left < items.length && compareTuples(items[left] as T, items[smallest] as T) < 0) smallest = left;
        if (right < items.length && compareTuples(items[right] as T, items[smallest] as T) < 0) smallest = right;
        if (smallest === i) break;
        [items[i], items[smallest]] = [items[smallest] as T, items[i] as T];
        i = smallest;
      }
    }
    return top;
  }
}

function compareTuples(a: ReadonlyArray<number | string>, b: ReadonlyArray<number | string>): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number | string;
    const y = b[i] as number | string;
    if (x < y) return -1;
    if (x > y) return 1;
  }
  return 0;
}

interface Claims {
  keep: Map<string, TopicPartition[]>; // what each member may keep (sticky credit)
  holders: Map<Key, Set<string>>; // every member that says it still has it
}

/** Who owns what. A partition claimed by several members belongs to the newest generation's
 * claim; if that generation has two claimants, to neither (Kafka's AbstractStickyAssignor). A
 * member keeps credit only for an existing partition of a topic it still subscribes to; but
 * every claimant still holds its partition, whatever its generation or subscription, until it
 * revokes it. */
function claimsOf(subscriptions: ReadonlyMap<string, Subscription>, allowed: ReadonlyMap<string, number[]>): Claims {
  const holders = new Map<Key, Set<string>>();
  const newest = new Map<Key, { tp: TopicPartition; generation: number; claimants: string[] }>();
  for (const [member, sub] of subscriptions) {
    for (const [topic, parts] of sub.ownedPartitions) {
      for (const partition of new Set(parts)) {
        const tp = { topic, partition };
        const key = keyOf(tp);
        const holding = holders.get(key) ?? new Set<string>();
        holding.add(member);
        holders.set(key, holding);
        const best = newest.get(key);
        if (best === undefined || sub.generationId > best.generation) {
          newest.set(key, { tp, generation: sub.generationId, claimants: [member] });
        } else if (sub.generationId === best.generation) {
          best.claimants.push(member);
        }
      }
    }
  }
  const keep = new Map<string, TopicPartition[]>([...subscriptions.keys()].map((m) => [m, []]));
  for (const { tp, claimants } of newest.values()) {
    const [member] = claimants;
    if (claimants.length !== 1 || member === undefined) continue;
    const assignable = (allowed.get(tp.topic) ?? []).length > tp.partition && tp.partition >= 0;
    if (assignable && subscriptions.get(member)?.topics.includes(tp.topic)) keep.get(member)?.push(tp);
  }
  return { keep, holders };
}

/** Balanced, then sticky: no member could take a partition from one with two more (sizes
 * within one for equal subscriptions), and members keep what they own where that allows.
 * Cooperative (KIP-429): a partition another member still holds goes to no one new this
 * round; its holder revokes it, rejoins, and the next round hands it over. */
export function assignSticky(
  subscriptions: ReadonlyMap<string, Subscription>,
  partitions: ReadonlyMap<string, number>,
  cooperative = false,
): Plan {
  if (subscriptions.size === 0) return new Map();
  const allowed = new Map<string, number[]>();
  for (const topic of subscribedTopics(subscriptions)) {
    allowed.set(topic, Array.from({ length: Math.max(0, partitions.get(topic) ?? 0) }, (_, p) => p));
  }
  const claims = claimsOf(subscriptions, allowed);
  let result = planOf(subscriptions, allowed, claims.keep);
  if (cooperative) {
    let given = withholdHeld(result, claims);
    if (total(given) < total(result)) given = settled(subscriptions, allowed, given);
    result = given;
  }
  return new Map([...result].map(([m, parts]) => [m, [...parts].sort(compareTopicPartitions)]));
}

/** The balanced assignment that keeps as much of `keep` as balance allows. */
function planOf(subscriptions: ReadonlyMap<string, Subscription>, allowed: ReadonlyMap<string, number[]>, keep: ReadonlyMap<string, TopicPartition[]>): Plan {
  const shapes = new Set([...subscriptions.values()].map((s) => [...new Set(s.topics)].sort(byString).join("\u0000")));
  if (shapes.size === 1) {
    const all = [...allowed.keys()].sort(byString).flatMap((topic) => (allowed.get(topic) ?? []).map((partition) => ({ topic, partition })));
    return assignUniform([...subscriptions.keys()].sort(byString), all, keep);
  }
  return assignGeneral(subscriptions, allowed, keep);
}

/** Cooperative: a member gets a partition only if it keeps it (its claim is the newest) or
 * nobody else holds it; the others' claims to it are stale and they revoke it now. */
function withholdHeld(result: Plan, claims: Claims): Plan {
  const kept = new Map<Key, string>();
  for (const [member, parts] of claims.keep) for (const tp of parts) kept.set(keyOf(tp), member);
  return new Map(
    [...result].map(([member, parts]) => [
      member,
      parts.filter((tp) => {
        const key = keyOf(tp);
        if (kept.get(key) === member) return true;
        return [...(claims.holders.get(key) ?? [])].every((holder) => holder === member);
      }),
    ]),
  );
}

/** A cooperative round that withheld partitions is followed by one that hands them out; that
 * round plans again from what this one gives. Give now only what it will not move again, so
 * the group settles in that single follow-up round. Each pass only drops partitions. */
function settled(subscriptions: ReadonlyMap<string, Subscription>, allowed: ReadonlyMap<string, number[]>, given: Plan): Plan {
  for (;;) {
    const followUp = planOf(subscriptions, allowed, given);
    const narrowed: Plan = new Map();
    for (const [member, parts] of given) {
      const stays = new Set((followUp.get(member) ?? []).map(keyOf));
      narrowed.set(member, parts.filter((tp) => stays.has(keyOf(tp))));
    }
    if (total(narrowed) === total(given)) return given;
    given = narrowed;
  }
}

/** A member's partitions ordered so that any prefix takes evenly from its topics. */
function spread(parts: readonly TopicPartition[]): TopicPartition[] {
  const rank = new Map<string, number>();
  const ranked = [...parts].sort(compareTopicPartitions).map((tp): [number, TopicPartition] => {
    const r = (rank.get(tp.topic) ?? -1) + 1;
    rank.set(tp.topic, r);
    return [r, tp];
  });
  ranked.sort((a, b) => a[0] - b[0] || compareTopicPartitions(a[1], b[1]));
  return ranked.map(([, tp]) => tp);
}

/** Everyone subscribes to the same topics: each gets floor(n/m) or one more, keeping what it
 * owns up to that (Kafka's constrained assignment). */
function assignUniform(members: string[], all: TopicPartition[], keep: ReadonlyMap<string, TopicPartition[]>): Plan {
  const low = Math.floor(all.length / members.length);
  let extra = all.length % members.length;
  const kept = (m: string): TopicPartition[] => keep.get(m) ?? [];
  const result: Plan = new Map();
  for (const member of [...members].sort((a, b) => kept(b).length - kept(a).length || byString(a, b))) {
    const mine = spread(kept(member));
    const size = extra > 0 && mine.length > low ? low + 1 : low;
    extra -= size - low;
    result.set(member, mine.slice(0, size));
  }
  const taken = new Set([...result.values()].flat().map(keyOf));
  const pool = all.filter((tp) => !taken.has(keyOf(tp)));
  let next = 0;
  const parts = (m: string): TopicPartition[] => result.get(m) ?? [];
  let hungry = members.filter((m) => parts(m).length < low);
  while (hungry.length > 0) {
    for (const member of hungry) parts(member).push(pool[next++] as TopicPartition);
    hungry = hungry.filter((m) => parts(m).length < low);
  }
  for (const member of members) {
    if (parts(member).length !== low) continue;
    if (next >= pool.length) break;
    parts(member).push(pool[next++] as TopicPartition);
  }
  return result;
}

/** Members' partition counts with, per distinct subscription, a min-heap of its members by
 * count; stale entries are dropped when they surface. */
class Loads {
  readonly heaps = new Map<string, Heap<[number, string]>>();
  readonly topicsOf = new Map<string, Set<string>>();
  readonly preferred = new Map<string, string[]>();

  constructor(
    private readonly shapeOf: ReadonlyMap<string, string>,
    shapes: ReadonlyMap<string, Set<string>>,
    readonly load: Map<string, number>,
  ) {
    const subscribers = new Map<string, number>();
    for (const [member, shape] of shapeOf) {
      const heap = this.heaps.get(shape) ?? new Heap<[number, string]>();
      heap.push([load.get(member) ?? 0, member]);
      this.heaps.set(shape, heap);
      for (const topic of shapes.get(shape) ?? []) subscribers.set(topic, (subscribers.get(topic) ?? 0) + 1);
    }
    for (const shape of this.heaps.keys()) {
      const topics = shapes.get(shape) ?? new Set<string>();
      this.topicsOf.set(shape, topics);
      this.preferred.set(shape, [...topics].sort((a, b) => (subscribers.get(a) ?? 0) - (subscribers.get(b) ?? 0) || byString(a, b)));
    }
  }

  add(member: string, delta: number): void {
    const load = (this.load.get(member) ?? 0) + delta;
    this.load.set(member, load);
    this.heaps.get(this.shapeOf.get(member) ?? "")?.push([load, member]);
  }

  least(shape: string): [number, string] | undefined {
    const heap = this.heaps.get(shape);
    if (heap === undefined) return undefined;
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      if (top[0] === this.load.get(top[1])) return top;
      heap.pop();
    }
    return undefined;
  }
}

type Held = Map<string, Map<string, TopicPartition[]>>;

function append(byTopic: Map<string, TopicPartition[]>, tp: TopicPartition): void {
  const parts = byTopic.get(tp.topic);
  if (parts === undefined) byTopic.set(tp.topic, [tp]);
  else parts.push(tp);
}

/** Unequal subscriptions: everyone keeps what it owns; the rest goes, topics with the fewest
 * subscribers first, to the least loaded subscriber; then partitions move from the most loaded
 * member to a subscriber with two fewer until none can. */
function assignGeneral(subscriptions: ReadonlyMap<string, Subscription>, allowed: ReadonlyMap<string, number[]>, keep: ReadonlyMap<string, TopicPartition[]>): Plan {
  const members = [...subscriptions.keys()].sort(byString);
  const held: Held = new Map(members.map((m) => [m, new Map<string, TopicPartition[]>()]));
  const hold = (member: string, tp: TopicPartition): void => append(held.get(member) as Map<string, TopicPartition[]>, tp);
  const taken = new Set<Key>();
  const load = new Map<string, number>();
  for (const member of members) {
    const parts = [...(keep.get(member) ?? [])].sort(compareTopicPartitions);
    for (const tp of parts) {
      hold(member, tp);
      taken.add(keyOf(tp));
    }
    load.set(member, parts.length);
  }
  const subscribers = new Map<string, string[]>([...allowed.keys()].map((t) => [t, []]));
  const width = new Map<string, number>();
  for (const member of members) {
    const topics = new Set(subscriptions.get(member)?.topics ?? []);
    width.set(member, topics.size);
    for (const topic of topics) subscribers.get(topic)?.push(member);
  }
  const count = (t: string): number => subscribers.get(t)?.length ?? 0;
  for (const topic of [...allowed.keys()].sort((a, b) => count(a) - count(b) || byString(a, b))) {
    // Ties go to the members with the fewest topics: the others have more to choose from.
    const heap = new Heap<[number, number, string]>((subscribers.get(topic) ?? []).map((m): [number, number, string] => [load.get(m) ?? 0, width.get(m) ?? 0, m]));
    for (const partition of allowed.get(topic) ?? []) {
      const tp = { topic, partition };
      if (taken.has(keyOf(tp))) continue;
      let top = heap.pop() as [number, number, string];
      while (top[0] !== load.get(top[2])) {
        heap.push([load.get(top[2]) ?? 0, top[1], top[2]]);
        top = heap.pop() as [number, number, string];
      }
      const member = top[2];
      hold(member, tp);
      load.set(member, (load.get(member) ?? 0) + 1);
      heap.push([load.get(member) ?? 0, top[1], member]);
    }
  }
  const shapeOf = new Map<string, string>();
  const shapes = new Map<string, Set<string>>();
  for (const member of members) {
    const topics = [...new Set(subscriptions.get(member)?.topics ?? [])].filter((t) => allowed.has(t)).sort(byString);
    const shape = topics.join("\u0000");
    shapeOf.set(member, shape);
    shapes.set(shape, new Set(topics));
  }
  const kept = new Map(members.map((m) => [m, new Set((keep.get(m) ?? []).map(keyOf))]));
  evenOut(held, new Loads(shapeOf, shapes, load), kept);
  return new Map([...held].map(([m, byTopic]) => [m, [...byTopic.values()].flat()]));
}

/** Move one partition at a time from the most loaded member to the least loaded subscriber of
 * one of its topics while that one has at least two fewer, one the giver did not own before
 * where it can. Each move lowers the sum of squared loads, so this ends. */
function evenOut(held: Held, loads: Loads, kept: ReadonlyMap<string, Set<Key>>): void {
  let moved = true;
  while (moved) {
    moved = false;
    const givers = new Heap<[number, string]>([...loads.load].map(([m, load]): [number, string] => [-load, m]));
    for (let entry = givers.pop(); entry !== undefined; entry = givers.pop()) {
      const [negative, giver] = entry;
      if (-negative !== loads.load.get(giver)) continue;
      const byTopic = held.get(giver) as Map<string, TopicPartition[]>;
      const target = taker(byTopic, loads, -negative, kept.get(giver) ?? new Set());
      if (target === undefined) continue;
      const [topic, receiver] = target;
      const parts = byTopic.get(topic) as TopicPartition[];
      const tp = parts.pop() as TopicPartition;
      if (parts.length === 0) byTopic.delete(topic);
      append(held.get(receiver) as Map<string, TopicPartition[]>, tp);
      loads.add(giver, -1);
      loads.add(receiver, 1);
      givers.push([-(loads.load.get(giver) ?? 0), giver]);
      givers.push([-(loads.load.get(receiver) ?? 0), receiver]);
      moved = true;
    }
  }
}

/** The topic and member to move one of these partitions to: the least loaded subscriber of
 * any of their topics, if it has at least two fewer than `load`; a topic whose next partition
 * to move was not kept by the giver first. */
function taker(byTopic: ReadonlyMap<string, TopicPartition[]>, loads: Loads, load: number, kept: ReadonlySet<Key>): [string, string] | undefined {
  let best: [number, string, string] | undefined;
  for (const shape of loads.heaps.keys()) {
    const least = loads.least(shape);
    if (least === undefined || least[0] > load - 2) continue;
    const topics = loads.topicsOf.get(shape) as Set<string>;
    if (![...byTopic.keys()].some((t) => topics.has(t))) continue;
    if (best === undefined || compareTuples(least, best) < 0) best = [least[0], least[1], shape];
  }
  if (best === undefined) return undefined;
  const preferred = (loads.preferred.get(best[2]) ?? []).filter((t) => byTopic.has(t));
  const fresh = preferred.find((t) => {
    const parts = byTopic.get(t) as TopicPartition[];
    return !kept.has(keyOf(parts[parts.length - 1] as TopicPartition));
  });
  return [fresh ?? (preferred[0] as string), best[1]];
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

/** What an eager sticky member owns and its generation, from its userData alone (Kafka's
 * StickyAssignor): it revoked everything before joining, so its subscription's ownedPartitions
 * are not its previous assignment, whatever they say. No userData, or one that cannot be read,
 * is no claim. */
export function withStickyMemory(sub: Subscription): Subscription {
  let ownedPartitions = new Map<string, number[]>();
  let generationId = -1;
  if (sub.userData !== null && sub.userData.length > 0) {
    try {
      ({ partitions: ownedPartitions, generation: generationId } = decodeStickyUserData(sub.userData));
    } catch (error) {
      if (!(error instanceof ConsumerProtocolError)) throw error;
    }
  }
  return { ...sub, ownedPartitions, generationId };
}

// --- the cooperative sticky assignor's generation ---
//
// Kafka's CooperativeStickyAssignor sends its generation as the subscription's userData (an
// int32), for leaders reading a subscription older than v2, which has no generationId field.

export function encodeCooperativeUserData(generation: number): Uint8Array {
  return new Writer().int32(generation).bytes();
}

/** A subscription without a generationId (v0/v1) takes the one its userData carries. */
export function withCooperativeGeneration(sub: Subscription): Subscription {
  if (sub.generationId >= 0 || sub.userData === null || sub.userData.length !== 4) return sub;
  return { ...sub, generationId: new Reader(sub.userData).int32() };
}

export const ASSIGNORS: Readonly<Record<string, Assignor>> = {
  range: assignRange,
  roundrobin: assignRoundRobin,
  sticky: (subs, parts) => assignSticky(subs, parts),
  "cooperative-sticky": (subs, parts) => assignSticky(subs, parts, true),
};

export const COOPERATIVE_ASSIGNORS: ReadonlySet<string> = new Set(["cooperative-sticky"]);
