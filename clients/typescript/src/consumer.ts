// The consumer protocol (KIP-848) from the member's side: heartbeats carry the subscription and
// what the member owns; answers carry its assignment; the member revokes what it lost and
// acknowledges by reporting what it owns in the next heartbeat.

import { randomUUID } from "node:crypto";
import { CoordinatorUnavailable, ErrorCode, FencedInstance, GroupcoordError, RETRIABLE_ERRORS, errorName, errorOf } from "./errors.js";
import { PartitionSet } from "./topic-partition.js";
import type { Transport } from "./transport.js";
import type { Json } from "./validate.js";

const JOIN_EPOCH = 0;
const LEAVE_EPOCH = -1;
const STATIC_LEAVE_EPOCH = -2;
const DEFAULT_INTERVAL_MS = 5000;

/** The coordinator no longer knows this member at its epoch (FENCED_MEMBER_EPOCH,
 * UNKNOWN_MEMBER_ID): its partitions are lost; it rejoins with epoch 0. */
export class RejoinRequired extends Error {
  override name = "RejoinRequired";
  constructor(readonly error: number) {
    super(errorName(error));
  }
}

export interface ConsumerSettings {
  groupId: string;
  topics: string[] | undefined;
  pattern: string | undefined;
  serverAssignor: string | undefined;
  rebalanceTimeoutMs: number;
  instanceId: string | undefined;
  transport: () => Promise<Transport>;
  topicName: (topicId: string) => Promise<string | undefined>;
  topicId: (name: string) => Promise<string | undefined>;
}

export class ConsumerMembership {
  // Generated once and kept for the member's life, rejoins included (KIP-848).
  readonly memberId = randomUUID();
  epoch = JOIN_EPOCH;
  heartbeatIntervalMs = DEFAULT_INTERVAL_MS;
  private sentOwned: PartitionSet | undefined;
  // After a heartbeat that got no answer the next one is "full" (every field, as Kafka's
  // consumer sends): if the lost one was applied, the coordinator answers it under its
  // lost-response rule instead of fencing the member.
  private full = true;
  private attempted = false; // a heartbeat was sent: the coordinator may know this member

  constructor(private readonly settings: ConsumerSettings) {}

  /** One heartbeat reporting `owned`; resolves to the new assignment when the coordinator sent
   * one. Throws RejoinRequired, FencedInstance, CoordinatorUnavailable (retry, after
   * rediscovering the coordinator) or GroupcoordError (fatal: a bad subscription, ...). */
  async heartbeat(owned: PartitionSet, timeoutMs?: number): Promise<PartitionSet | undefined> {
    const joining = this.epoch === JOIN_EPOCH;
    const full = joining || this.full;
    const s = this.settings;
    const body: Json = {
      groupId: s.groupId,
      memberId: this.memberId,
      memberEpoch: this.epoch,
      instanceId: s.instanceId ?? null,
      rebalanceTimeoutMs: full ? s.rebalanceTimeoutMs : -1,
      subscribedTopicNames: full ? (s.topics ?? null) : null,
      subscribedTopicRegex: full ? (s.pattern ?? null) : null,
      serverAssignor: full ? (s.serverAssignor ?? null) : null,
      topicPartitions: null,
    };
    let reported = owned;
    if (joining) {
      reported = new PartitionSet(); // a (re)joining member owns nothing (Kafka refuses anything else)
      body.topicPartitions = [];
    } else if (full || this.sentOwned === undefined || !owned.equals(this.sentOwned)) {
      body.topicPartitions = await this.byTopicId(owned);
    }
    this.attempted = true;
    this.full = true; // until an answer arrives
    const transport = await s.transport();
    const reply = await transport.call("consumer-group-heartbeat", body, { ...(timeoutMs ? { timeoutMs } : {}), retries: 0 });
    this.full = false;
    this.checkAnswer(reply.body);
    if (body.topicPartitions !== null) this.sentOwned = reported.copy();
    this.epoch = reply.body.memberEpoch;
    this.heartbeatIntervalMs = reply.body.heartbeatIntervalMs || DEFAULT_INTERVAL_MS;
    const assignment = reply.body.assignment;
    if (assignment === null || assignment === undefined) return undefined;
    const result = new PartitionSet();
    for (const entry of assignment.topicPartitions ?? []) {
      const name = await s.topicName(entry.topicId);
      if (name !== undefined) for (const partition of entry.partitions) result.add({ topic: name, partition });
    }
    return result;
  }

  private checkAnswer(body: Json): void {
    const error = errorOf(body);
    if (error === ErrorCode.NONE) return;
    const message = `consumer-group-heartbeat: ${errorName(error)}: ${body.errorMessage ?? ""}`;
    if (error === ErrorCode.FENCED_MEMBER_EPOCH || error === ErrorCode.UNKNOWN_MEMBER_ID) {
      this.reset();
      throw new RejoinRequired(error);
    }
    if (error === ErrorCode.FENCED_INSTANCE_ID || error === ErrorCode.UNRELEASED_INSTANCE_ID) {
      throw new FencedInstance(message, { error });
    }
    if (RETRIABLE_ERRORS.has(error)) throw new CoordinatorUnavailable(message, { error });
    throw new GroupcoordError(message, { error });
  }

  private async byTopicId(owned: PartitionSet): Promise<Json[]> {
    const byId = new Map<string, number[]>();
    for (const [topic, partitions] of owned.byTopicSorted()) {
      const id = await this.settings.topicId(topic);
      if (id !== undefined) byId.set(id, [...(byId.get(id) ?? []), ...partitions]);
    }
    return [...byId.keys()].sort().map((topicId) => ({ topicId, partitions: byId.get(topicId) }));
  }

  /** Forgets the epoch: the next heartbeat rejoins (same member id, epoch 0). */
  reset(): void {
    this.epoch = JOIN_EPOCH;
    this.sentOwned = undefined;
    this.full = true;
  }

  /** Leaves (-1), or for a static member leaves temporarily (-2): the coordinator keeps its
   * assignment for the instance's return until the session times out. */
  async leave(): Promise<void> {
    const instanceId = this.settings.instanceId;
    const epoch = instanceId !== undefined ? STATIC_LEAVE_EPOCH : LEAVE_EPOCH;
    this.reset();
    if (!this.attempted) return; // never sent a heartbeat: the coordinator does not know it
    this.attempted = false;
    const transport = await this.settings.transport();
    await transport.call(
      "consumer-group-heartbeat",
      { groupId: this.settings.groupId, memberId: this.memberId, memberEpoch: epoch, instanceId: instanceId ?? null },
      { retries: 1 },
    );
  }

  commitFields(): Json {
    return { generationIdOrMemberEpoch: this.epoch, memberId: this.memberId, groupInstanceId: this.settings.instanceId ?? null };
  }
}
