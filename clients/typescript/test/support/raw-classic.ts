// One classic member's raw requests, for tests that need a member to act at a chosen moment
// (join without syncing, assign what it likes as the leader). 202s are polled with the same
// body after retryAfterMs.

import { encodeAssignment, encodeSubscription, subscription } from "../../src/consumer-protocol.js";
import { Transport } from "../../src/transport.js";
import type { Json } from "../../src/validate.js";

const BARRIER_DEADLINE_MS = 60_000;
const PROTOCOL = "cooperative-sticky";

/** A v2 subscription to `topics`, base64 as join-group carries it. */
export function subscriptionOf(topics: string[]): string {
  return Buffer.from(encodeSubscription(subscription({ topics, version: 2 }))).toString("base64");
}

/** An assignment of topic -> partitions, base64 as sync-group carries it. */
export function assignmentOf(partitions: Record<string, number[]>): string {
  const data = encodeAssignment({ partitions: new Map(Object.entries(partitions)), userData: null, version: 0 });
  return Buffer.from(data).toString("base64");
}

export class RawClassic {
  memberId = "";
  generation = -1;
  private readonly transport: Transport;

  constructor(
    url: string,
    private readonly groupId: string,
    private readonly metadata: string,
  ) {
    this.transport = new Transport(url);
  }

  /** Joins until a 200 that is not MEMBER_ID_REQUIRED; resolves to its body. */
  async join(): Promise<Json> {
    for (;;) {
      const body = await this.untilAnswered("join-group", () => ({
        groupId: this.groupId,
        sessionTimeoutMs: 6000,
        rebalanceTimeoutMs: 10_000,
        memberId: this.memberId,
        groupInstanceId: null,
        protocolType: "consumer",
        protocols: [{ name: PROTOCOL, metadata: this.metadata }],
      }));
      this.memberId = body.memberId ?? this.memberId;
      if (body.errorCode === 79) continue; // MEMBER_ID_REQUIRED: again with the id handed out
      if (body.errorCode !== 0) throw new Error(`join-group: ${JSON.stringify(body)}`);
      this.generation = body.generationId;
      return body;
    }
  }

  /** Syncs; the leader hands out `assignments` (member id -> assignmentOf(...)). */
  async sync(assignments: Record<string, string> = {}): Promise<Json> {
    const body = await this.untilAnswered("sync-group", () => ({
      groupId: this.groupId,
      generationId: this.generation,
      memberId: this.memberId,
      groupInstanceId: null,
      protocolType: "consumer",
      protocolName: PROTOCOL,
      assignments: Object.entries(assignments).map(([memberId, assignment]) => ({ memberId, assignment })),
    }));
    if (body.errorCode !== 0) throw new Error(`sync-group: ${JSON.stringify(body)}`);
    return body;
  }

  /** One heartbeat; resolves to its error code. */
  async heartbeat(): Promise<number> {
    const body = { groupId: this.groupId, generationId: this.generation, memberId: this.memberId, groupInstanceId: null };
    return (await this.transport.call("heartbeat", body)).body.errorCode;
  }

  async leave(): Promise<void> {
    await this.transport.call("leave-group", { groupId: this.groupId, members: [{ memberId: this.memberId }] });
  }

  private async untilAnswered(api: string, body: () => Json): Promise<Json> {
    const deadline = Date.now() + BARRIER_DEADLINE_MS;
    for (;;) {
      const reply = await this.transport.call(api, body());
      if (reply.status !== 202) return reply.body;
      this.memberId = reply.body.memberId ?? this.memberId;
      if (Date.now() > deadline) throw new Error(`${api}: the barrier did not complete in time`);
      await new Promise((r) => setTimeout(r, reply.body.retryAfterMs ?? 100));
    }
  }
}
