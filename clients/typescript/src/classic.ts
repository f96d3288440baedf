// The classic protocol from the member's side: the two-step join, 202 polling, the leader's
// assignment, sync, heartbeats, leave. Eager members revoke everything before rejoining;
// cooperative members (KIP-429) keep what they own and revoke only what moved.

import { ASSIGNORS, COOPERATIVE_ASSIGNORS, encodeCooperativeUserData, encodeStickyUserData, withCooperativeGeneration, withStickyMemory } from "./assignors.js";
import {
  ConsumerProtocolError,
  type Subscription,
  decodeAssignment,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  subscription,
} from "./consumer-protocol.js";
import { CoordinatorUnavailable, ErrorCode, FencedInstance, GroupcoordError, RETRIABLE_ERRORS, errorName, errorOf } from "./errors.js";
import { PartitionSet } from "./topic-partition.js";
import { now, sleep } from "./timing.js";
import type { Reply, Transport } from "./transport.js";
import type { Json } from "./validate.js";

const PROTOCOL_TYPE = "consumer";
const STICKY_USER_DATA: ReadonlySet<string> = new Set(["sticky"]); // eager: remembers through userData
const COOPERATIVE_STICKY = "cooperative-sticky"; // its userData: the generation (Kafka's)

/** The outcome of one rebalance round, for the listener. */
export interface JoinResult {
  revoked: PartitionSet; // after the sync (cooperative); what went before the join: beforeJoin
  assigned: PartitionSet;
  rejoin: boolean; // something was revoked (cooperative), or the assignment was refused
}

/** The round failed with an error that a fresh join resolves. */
export class RejoinNeeded extends Error {
  override name = "RejoinNeeded";
  constructor(
    readonly error: number,
    readonly lost = false,
  ) {
    super(errorName(error));
  }
}

export interface ClassicSettings {
  groupId: string;
  assignors: string[];
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  instanceId: string | undefined;
  heartbeatIntervalMs: number | undefined;
  transport: () => Promise<Transport>;
  /** The topics to subscribe to now (a pattern's matches, re-read). */
  topics: () => Promise<string[]>;
  partitionCounts: (topics: string[]) => Promise<Map<string, number>>;
}

export class ClassicMembership {
  memberId = "";
  generation = -1;
  owned = new PartitionSet();
  subscribed: string[] = [];
  heartbeatIntervalMs: number;
  private readonly heartbeatFrequency: number | undefined;
  // The last assignment and its generation: the eager sticky assignor's userData.
  private previous = new PartitionSet();
  private previousGeneration = -1;

  constructor(private readonly settings: ClassicSettings) {
    const { sessionTimeoutMs, heartbeatIntervalMs } = settings;
    this.heartbeatIntervalMs = Math.max(1, Math.floor(sessionTimeoutMs / 3));
    // Kafka's heartbeat.interval.ms is the client's choice; over HTTP it travels as join-group's
    // heartbeatFrequency (heartbeats per session), with the failed-heartbeat threshold equal to
    // it so that the coordinator still waits one session timeout.
    if (heartbeatIntervalMs !== undefined) {
      this.heartbeatFrequency = Math.max(1, Math.floor(sessionTimeoutMs / heartbeatIntervalMs));
      this.heartbeatIntervalMs = Math.floor(sessionTimeoutMs / this.heartbeatFrequency);
    }
  }

  /** Kafka's rule: COOPERATIVE only if every listed assignor supports it; a mix (the upgrade
   * path ["cooperative-sticky", "range"]) is eager. */
  get cooperative(): boolean {
    return this.settings.assignors.every((name) => COOPERATIVE_ASSIGNORS.has(name));
  }

  /** Joins and syncs one round. `beforeJoin` gets what must be revoked before joining:
   * everything for eager members; for cooperative ones the partitions of topics no longer
   * subscribed (claiming them would hold them from everyone for a round). */
  async rejoin(beforeJoin: (partitions: PartitionSet) => Promise<void>): Promise<JoinResult> {
    this.subscribed = [...(await this.settings.topics())].sort();
    const subscribed = new Set(this.subscribed);
    const revokedFirst = this.cooperative ? new PartitionSet(this.owned.toArray().filter((tp) => !subscribed.has(tp.topic))) : this.owned.copy();
    if (revokedFirst.size > 0) {
      await beforeJoin(revokedFirst.copy());
      this.owned = this.owned.minus(revokedFirst);
    }
    const joined = await this.join();
    const assignment = await this.sync(joined);
    const result: JoinResult = { revoked: new PartitionSet(), assigned: new PartitionSet(), rejoin: false };
    if (assignment.toArray().some((tp) => !subscribed.has(tp.topic))) {
      // Kafka's consumer refuses an assignment that does not match its subscription: it keeps
      // what it has and rejoins with the current subscription.
      result.rejoin = true;
      return result;
    }
    result.assigned = assignment.minus(this.owned);
    if (this.cooperative) {
      result.revoked = this.owned.minus(assignment);
      result.rejoin = result.revoked.size > 0;
    }
    this.owned = assignment;
    this.previous = assignment.copy();
    this.previousGeneration = this.generation;
    return result;
  }

  /** Each protocol's metadata: Kafka's ConsumerProtocol subscription (v2), with the previous
   * assignment as userData for the eager sticky assignor. */
  private async metadata(): Promise<Map<string, string>> {
    const metadata = new Map<string, string>();
    for (const name of this.settings.assignors) {
      let userData: Uint8Array | null = null;
      if (STICKY_USER_DATA.has(name) && this.previousGeneration >= 0) {
        userData = encodeStickyUserData(this.previous.byTopicSorted(), this.previousGeneration);
      } else if (name === COOPERATIVE_STICKY) {
        userData = encodeCooperativeUserData(this.generation);
      }
      const sub = subscription({
        topics: this.subscribed,
        userData,
        ownedPartitions: this.owned.byTopicSorted(),
        generationId: this.generation,
        version: 2,
      });
      metadata.set(name, Buffer.from(encodeSubscription(sub)).toString("base64"));
    }
    return metadata;
  }

  private joinBody(metadata: Map<string, string>): Json {
    const { groupId, sessionTimeoutMs, rebalanceTimeoutMs, instanceId } = this.settings;
    const body: Json = {
      groupId,
      sessionTimeoutMs,
      rebalanceTimeoutMs,
      memberId: this.memberId,
      groupInstanceId: instanceId ?? null,
      protocolType: PROTOCOL_TYPE,
      protocols: [...metadata].map(([name, data]) => ({ name, metadata: data })),
    };
    if (this.heartbeatFrequency !== undefined) {
      body.heartbeatFrequency = this.heartbeatFrequency;
      body.failedHeartbeatThreshold = this.heartbeatFrequency;
    }
    return body;
  }

  private async join(): Promise<Json> {
    const metadata = await this.metadata();
    const deadline = now() + this.barrierLimitMs();
    for (;;) {
      const reply = await (await this.settings.transport()).call("join-group", this.joinBody(metadata));
      if (reply.status === 202) {
        this.memberId = reply.body.memberId;
        await waitAtBarrier("join-group", reply, deadline);
        continue;
      }
      const error = errorOf(reply.body);
      if (error === ErrorCode.MEMBER_ID_REQUIRED) {
        this.memberId = reply.body.memberId;
        continue;
      }
      this.checkRoundError("join-group", error, reply.body);
      this.memberId = reply.body.memberId;
      this.generation = reply.body.generationId;
      this.heartbeatIntervalMs = reply.body.heartbeatIntervalMs || Math.floor(this.settings.sessionTimeoutMs / 3);
      return reply.body;
    }
  }

  /** Throws what a join or sync answer other than success means. */
  private checkRoundError(api: string, error: number, body: Json): void {
    if (error === ErrorCode.NONE) return;
    if (error === ErrorCode.UNKNOWN_MEMBER_ID) {
      this.reset();
      throw new RejoinNeeded(error, true);
    }
    if (error === ErrorCode.FENCED_INSTANCE_ID) throw new FencedInstance("another member took this groupInstanceId", { error });
    if (RETRIABLE_ERRORS.has(error)) throw new CoordinatorUnavailable(`${api}: ${errorName(error)}`, { error });
    if (api === "sync-group" || error === ErrorCode.REBALANCE_IN_PROGRESS || error === ErrorCode.ILLEGAL_GENERATION) {
      throw new RejoinNeeded(error);
    }
    throw new GroupcoordError(`${api} failed: ${errorName(error)}: ${body.errorMessage ?? ""}`, { error });
  }

  private async leaderAssignments(joined: Json): Promise<Json[]> {
    if (joined.skipAssignment) return [];
    let subscriptions = new Map<string, Subscription>();
    for (const member of joined.members as Json[]) {
      try {
        const decoded = decodeSubscription(Buffer.from(member.metadata ?? "", "base64"));
        subscriptions.set(member.memberId, { ...decoded, groupInstanceId: member.groupInstanceId ?? null });
      } catch (error) {
        if (!(error instanceof ConsumerProtocolError)) throw error;
        subscriptions.set(member.memberId, subscription({ topics: [] })); // unreadable: assign it nothing
      }
    }
    if (STICKY_USER_DATA.has(joined.protocolName)) {
      subscriptions = new Map([...subscriptions].map(([m, s]) => [m, withStickyMemory(s)]));
    } else if (joined.protocolName === COOPERATIVE_STICKY) {
      subscriptions = new Map([...subscriptions].map(([m, s]) => [m, withCooperativeGeneration(s)]));
    }
    const topics = [...new Set([...subscriptions.values()].flatMap((s) => s.topics))].sort();
    const counts = await this.settings.partitionCounts(topics);
    const assignor = ASSIGNORS[joined.protocolName];
    if (assignor === undefined) throw new GroupcoordError(`the group chose the unknown assignor ${joined.protocolName}`);
    return [...assignor(subscriptions, counts)].map(([memberId, parts]) => {
      const data = encodeAssignment({ partitions: new PartitionSet(parts).byTopicSorted(), userData: null, version: 0 });
      return { memberId, assignment: Buffer.from(data).toString("base64") };
    });
  }

  private async sync(joined: Json): Promise<PartitionSet> {
    const leader = joined.leader === this.memberId;
    const body = {
      groupId: this.settings.groupId,
      generationId: this.generation,
      memberId: this.memberId,
      groupInstanceId: this.settings.instanceId ?? null,
      protocolType: PROTOCOL_TYPE,
      protocolName: joined.protocolName,
      assignments: leader ? await this.leaderAssignments(joined) : [],
    };
    const deadline = now() + this.barrierLimitMs();
    for (;;) {
      const reply = await (await this.settings.transport()).call("sync-group", body);
      if (reply.status === 202) {
        await waitAtBarrier("sync-group", reply, deadline);
        continue;
      }
      this.checkRoundError("sync-group", errorOf(reply.body), reply.body);
      try {
        return PartitionSet.of(decodeAssignment(Buffer.from(reply.body.assignment ?? "", "base64")).partitions);
      } catch (error) {
        if (error instanceof ConsumerProtocolError) return new PartitionSet();
        throw error;
      }
    }
  }

  // The coordinator completes a join barrier within the rebalance timeout and hands the
  // leader's assignment out as soon as it has it; past that plus a margin something is wrong:
  // give the round up and let the caller start another.
  private barrierLimitMs(): number {
    return this.settings.rebalanceTimeoutMs + Math.max(5000, this.settings.sessionTimeoutMs);
  }

  async heartbeat(timeoutMs: number): Promise<number> {
    const transport = await this.settings.transport();
    const reply = await transport.call(
      "heartbeat",
      {
        groupId: this.settings.groupId,
        generationId: this.generation,
        memberId: this.memberId,
        groupInstanceId: this.settings.instanceId ?? null,
      },
      { timeoutMs, retries: 0 },
    );
    return errorOf(reply.body);
  }

  /** Leaves the group (a dynamic member). A static member sends nothing and so leaves
   * temporarily, as Kafka's consumer does: its partitions wait for it (no rebalance) until its
   * session timeout. */
  async leave(): Promise<void> {
    if (!this.memberId || this.settings.instanceId !== undefined) return;
    const memberId = this.memberId;
    this.reset();
    const transport = await this.settings.transport();
    await transport.call("leave-group", { groupId: this.settings.groupId, members: [{ memberId }] }, { retries: 1 });
  }

  /** Forgets the membership (UNKNOWN_MEMBER_ID, fenced): the next join starts afresh. */
  reset(): void {
    this.memberId = "";
    this.generation = -1;
  }

  commitFields(): Json {
    return { generationIdOrMemberEpoch: this.generation, memberId: this.memberId, groupInstanceId: this.settings.instanceId ?? null };
  }
}

async function waitAtBarrier(api: string, reply: Reply, deadline: number): Promise<void> {
  if (now() >= deadline) throw new CoordinatorUnavailable(`${api}: the barrier did not complete in time`);
  await sleep(Math.max(0, reply.body.retryAfterMs ?? 100));
}
