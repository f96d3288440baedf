// What the group tests share: the coordinator's short timers, members that poll as a
// consumer's main loop does, an ownership timeline built from the listeners (of members in
// this process and in others) that fails on any partition held twice, and waiting with
// deadlines.

import { GroupMember, type GroupMemberOptions, type RebalanceListener, type TopicPartition, Transport } from "../../src/index.js";

// The coordinator as these tests run it: failures are noticed in seconds. Consumer-protocol
// sessions are 5 s, as the Python e2e tests' (two busy CI cores: shorter sessions expired
// members that were alive).
export const CONSUMER_SESSION_MS = 5000;
export const SETTINGS = {
  "group.consumer.heartbeat.interval.ms": 200,
  "group.consumer.min.heartbeat.interval.ms": 100,
  "group.consumer.session.timeout.ms": CONSUMER_SESSION_MS,
  "group.consumer.min.session.timeout.ms": 1000,
  "group.min.session.timeout.ms": 100,
  "group.initial.rebalance.delay.ms": 100,
  "groupcoord.barrier.hold.ms": 300,
  "groupcoord.sweep.interval.ms": 200,
};

// Classic members choose their own timers: an 8 s session (a member does not heartbeat during
// a rebalance round, which takes seconds on two busy cores), heartbeats every 500 ms (which is
// also how soon a member hears of a rebalance).
export const CLASSIC_SESSION_MS = 8000;
export const CLASSIC_HEARTBEAT_MS = 500;
export const CLASSIC_REBALANCE_MS = 15_000;

// Real-time bounds are generous (2 busy cores); they are met in a second or two when idle.
export const CONVERGE_MS = 60_000;
export const QUIET_MS = 2000;

export type ProtocolMode = { protocol: "consumer" } | { protocol: "classic"; assignors: Array<"range" | "roundrobin" | "sticky" | "cooperative-sticky"> };

export function unique(prefix: string): string {
  return `${prefix}-${Math.random().toString(16).slice(2, 10)}`;
}

export async function createTopic(url: string, name: string, partitions: number): Promise<void> {
  const reply = await new Transport(url).call("create-topics", { topics: [{ name, numPartitions: partitions }] });
  const topic = reply.body.topics[0];
  // 36 TOPIC_ALREADY_EXISTS: names are unique, so an earlier attempt of this call landed (the
  // transport retried it after a timeout on a busy machine).
  if (topic.errorCode !== 0 && topic.errorCode !== 36) throw new Error(`create-topics ${name}: ${JSON.stringify(topic)}`);
}

export function allPartitions(topic: string, count: number): TopicPartition[] {
  return Array.from({ length: count }, (_, partition) => ({ topic, partition }));
}

/** The member ids the coordinator lists for the group now. */
export async function memberIds(url: string, group: string, protocol: "consumer" | "classic"): Promise<string[]> {
  const transport = new Transport(url);
  const body =
    protocol === "classic"
      ? (await transport.call("describe-groups", { groups: [group] })).body
      : (await transport.call("consumer-group-describe", { groupIds: [group] })).body;
  return (body.groups[0].members as Array<{ memberId: string }>).map((m) => m.memberId).sort();
}

export async function waitUntil<T>(condition: () => T | Promise<T>, timeoutMs: number, what: string, intervalMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`not within ${Math.round(timeoutMs / 1000)} s: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const key = (tp: TopicPartition): string => `${tp.topic}/${tp.partition}`;

export interface OwnershipEvent {
  at: number; // epoch ms, the same clock in every process of the machine
  member: string;
  kind: "assigned" | "revoked" | "lost";
  partitions: TopicPartition[];
}

/** Every listener call of a group's members, in whatever process they run. */
export class Timeline {
  readonly events: OwnershipEvent[] = [];

  listener(member: string): RebalanceListener {
    const add = (kind: OwnershipEvent["kind"]) => (partitions: TopicPartition[]) => {
      this.events.push({ at: Date.now(), member, kind, partitions });
    };
    return { onPartitionsAssigned: add("assigned"), onPartitionsRevoked: add("revoked"), onPartitionsLost: add("lost") };
  }

  /** Replays the events in time order; each partition taken while another member still
   * holds it is one violation ("p taken by b while a holds it"). */
  overlaps(): string[] {
    const holders = new Map<string, string>();
    const violations: string[] = [];
    for (const event of [...this.events].sort((a, b) => a.at - b.at)) {
      for (const tp of event.partitions) {
        const holder = holders.get(key(tp));
        if (event.kind === "assigned") {
          if (holder !== undefined && holder !== event.member) violations.push(`${key(tp)} taken by ${event.member} while ${holder} holds it`);
          holders.set(key(tp), event.member);
        } else if (holder === event.member) {
          holders.delete(key(tp));
        }
      }
    }
    return violations;
  }

  /** Who holds what after the last event. */
  holders(): Map<string, string> {
    const holders = new Map<string, string>();
    for (const event of [...this.events].sort((a, b) => a.at - b.at)) {
      for (const tp of event.partitions) {
        if (event.kind === "assigned") holders.set(key(tp), event.member);
        else if (holders.get(key(tp)) === event.member) holders.delete(key(tp));
      }
    }
    return holders;
  }

  since(at: number, member?: string): OwnershipEvent[] {
    return this.events.filter((e) => e.at >= at && (member === undefined || e.member === member));
  }

  lastEventAt(): number {
    return Math.max(0, ...this.events.map((e) => e.at));
  }
}

/** A GroupMember polled in a loop, as a consumer's main loop would. */
export class Polled {
  readonly errors: unknown[] = [];
  private stopped = false;
  private readonly loop: Promise<void>;

  constructor(
    readonly name: string,
    readonly member: GroupMember,
  ) {
    this.loop = this.run();
  }

  static start(url: string, group: string, name: string, timeline: Timeline, mode: ProtocolMode, extra: GroupMemberOptions = {}): Polled {
    const classic = mode.protocol === "classic"
      ? { protocol: "classic" as const, assignors: mode.assignors, sessionTimeoutMs: CLASSIC_SESSION_MS, heartbeatIntervalMs: CLASSIC_HEARTBEAT_MS }
      : { protocol: "consumer" as const, sessionTimeoutMs: CONSUMER_SESSION_MS };
    const options = { ...classic, rebalanceTimeoutMs: CLASSIC_REBALANCE_MS, clientId: name, listener: timeline.listener(name), ...extra };
    return new Polled(name, new GroupMember(url, group, options));
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.member.poll(100);
      } catch (error) {
        if (this.stopped) return;
        this.errors.push(error);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  get owned(): TopicPartition[] {
    return this.member.assignment();
  }

  async stopPolling(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }

  async close(): Promise<void> {
    await this.stopPolling();
    await this.member.close();
  }
}

/** Every partition owned by exactly one of `owners` (member -> what it owns), sizes within
 * one of each other. */
export function balanced(owners: TopicPartition[][], partitions: TopicPartition[]): boolean {
  const all = owners.flat().map(key);
  if (all.length !== partitions.length || new Set(all).size !== all.length) return false;
  if (!partitions.every((tp) => all.includes(key(tp)))) return false;
  const sizes = owners.map((o) => o.length);
  return Math.max(...sizes) - Math.min(...sizes) <= 1;
}
