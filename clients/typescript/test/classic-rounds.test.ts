// The client's classic rounds against a live `groupcoord serve` (KIP-429 as Kafka's consumer
// does it): a cooperative member revokes a dropped topic's partitions before it joins, and a
// mixed assignor list is eager unless every assignor is cooperative.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClassicMembership } from "../src/classic.js";
import { PartitionSet } from "../src/topic-partition.js";
import { Transport } from "../src/transport.js";
import { SETTINGS, allPartitions, createTopic, unique } from "./support/group.js";
import { type Server, startServe } from "./support/processes.js";

const PARTITIONS = 2;

function membership(url: string, subscribed: string[], assignors: string[]): ClassicMembership {
  return new ClassicMembership({
    groupId: unique("rounds"),
    assignors,
    sessionTimeoutMs: 6000,
    rebalanceTimeoutMs: 10_000,
    instanceId: undefined,
    heartbeatIntervalMs: undefined,
    transport: async () => new Transport(url),
    topics: async () => [...subscribed],
    partitionCounts: async (topics) => new Map(topics.map((t) => [t, PARTITIONS])),
  });
}

const partitionsOf = (...topics: string[]): PartitionSet => new PartitionSet(topics.flatMap((t) => allPartitions(t, PARTITIONS)));

describe("classic rounds", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("a cooperative member revokes a dropped topic's partitions before it joins", async () => {
    const [kept, dropped] = [unique("kept"), unique("dropped")];
    await createTopic(serve.url, kept, PARTITIONS);
    await createTopic(serve.url, dropped, PARTITIONS);
    const subscribed = [kept, dropped];
    const classic = membership(serve.url, subscribed, ["cooperative-sticky"]);
    const beforeJoin: PartitionSet[] = [];
    await classic.rejoin(async (p) => void beforeJoin.push(p));
    assert.ok(classic.owned.equals(partitionsOf(kept, dropped)));
    subscribed.pop();
    const result = await classic.rejoin(async (p) => void beforeJoin.push(p));
    assert.equal(beforeJoin.length, 1);
    assert.ok(beforeJoin[0]?.equals(partitionsOf(dropped)), "only the dropped topic, before the join");
    assert.equal(result.revoked.size, 0);
    assert.ok(classic.owned.equals(partitionsOf(kept)));
  });

  it("an assignor list with an eager entry rebalances eagerly", async () => {
    const topic = unique("mixed");
    await createTopic(serve.url, topic, PARTITIONS);
    const classic = membership(serve.url, [topic], ["cooperative-sticky", "range"]);
    assert.equal(classic.cooperative, false);
    const beforeJoin: PartitionSet[] = [];
    await classic.rejoin(async (p) => void beforeJoin.push(p));
    await classic.rejoin(async (p) => void beforeJoin.push(p));
    assert.equal(beforeJoin.length, 1, "everything is revoked before the second join");
    assert.ok(beforeJoin[0]?.equals(partitionsOf(topic)));
  });
});
