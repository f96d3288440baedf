// Commits that carry DynamoDB writes (docs/exactly-once.md), against `groupcoord serve` on a
// DynamoDB endpoint (DynamoDB Local) with a sink table: the writes land with the offsets exactly once
// though an answer is lost, a failed condition refuses the whole commit, and a zombie's writes
// (with offsets, or alone) are refused with its commit.

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { CommitFailed, GroupMember, WriteConditionFailed, type Write, sink } from "../src/index.js";
import {
  CONVERGE_MS,
  Polled,
  SETTINGS,
  Timeline,
  allPartitions,
  balanced,
  createTopic,
  unique,
  waitUntil,
} from "./support/group.js";
import { JsonLinesProcess, PACKAGE_ROOT, type Server, python, startDynamoDB, startServe } from "./support/processes.js";
import { Proxy } from "./support/proxy.js";
import { ownedBy } from "./support/scenarios.js";

// A table of this run's own: the endpoint may be CI's, shared with the Python tests.
const TABLE = `ts-counts-${Math.random().toString(16).slice(2, 10)}`;
// Longer sessions than the other files': every request goes through DynamoDB Local, slower
// than the in-memory store.
const SESSION_MS = 8000;
const HELPER = join(PACKAGE_ROOT, "test", "support", "sink_table.py");

function add(key: string, by: number): Write {
  return sink.update(TABLE, { k: key }, "ADD #n :by", { names: { "#n": "n" }, values: { ":by": by } });
}

describe("commits with DynamoDB writes", { concurrency: true }, () => {
  let dynamodb: Server;
  let serve: Server;
  // Not execFileSync: the members' heartbeats run on this process's event loop.
  const counts = async (): Promise<Record<string, number>> =>
    JSON.parse((await promisify(execFile)(python(), [HELPER, "read", dynamodb.url, TABLE], { encoding: "utf8" })).stdout);

  before(async () => {
    dynamodb = await startDynamoDB();
    execFileSync(python(), [HELPER, "create", dynamodb.url, TABLE]);
    serve = await startServe({ ...SETTINGS, "group.consumer.session.timeout.ms": SESSION_MS, "groupcoord.sink.tables": TABLE }, dynamodb.url);
  });
  after(async () => {
    await serve?.stop();
    await dynamodb?.stop();
  });

  async function joined(url: string, topic: string): Promise<GroupMember> {
    const member = new GroupMember(url, unique("eo"), { topics: [topic], sessionTimeoutMs: SESSION_MS });
    await waitUntil(() => member.poll(100).then((owned) => owned.length > 0), CONVERGE_MS, "the member owns its partition");
    return member;
  }

  it("applies a commit's writes with its offsets once, though its answer was lost and it was retried", async () => {
    const topic = unique("orders");
    await createTopic(serve.url, topic, 1);
    const proxy = await Proxy.start(serve.url);
    proxy.rule = (api) => (api === "offset-commit" && proxy.count("offset-commit") === 1 ? { kind: "drop-answer" } : undefined);
    const member = await joined(proxy.url, topic);
    const key = unique("customer");
    try {
      await member.commit([{ topic, partition: 0, offset: 10 }], { writes: [add(key, 5)] });
      const sent = proxy.seen.filter((s) => s.api === "offset-commit").map((s) => JSON.parse(s.body).idempotencyKey);
      assert.equal(sent.length, 2, "the commit was not retried");
      assert.equal(sent[0], sent[1], "a retry carried another idempotency key");
      assert.equal((await counts())[key], 5, "the writes were applied twice (or not at all)");
      assert.deepEqual(await member.committed([{ topic, partition: 0 }]), [{ topic, partition: 0, offset: 10 }]);
      // Writes alone are a commit too.
      await member.commit([], { writes: [add(key, 1)] });
      assert.equal((await counts())[key], 6);
    } finally {
      await member.close();
      await proxy.close();
    }
  });

  it("refuses the whole commit when a write's condition fails: WriteConditionFailed names it", async () => {
    const topic = unique("orders");
    await createTopic(serve.url, topic, 1);
    const member = await joined(serve.url, topic);
    const [written, missing] = [unique("k"), unique("absent")];
    try {
      const writes = [add(written, 1), sink.conditionCheck(TABLE, { k: missing }, "attribute_exists(k)")];
      const error = await member.commit([{ topic, partition: 0, offset: 3 }], { writes }).then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof WriteConditionFailed, String(error));
      assert.equal(error.index, 1);
      assert.match(error.reason, /ConditionalCheckFailed/);
      assert.equal((await counts())[written], undefined, "a write of the refused commit landed");
      assert.deepEqual(await member.committed([{ topic, partition: 0 }]), [{ topic, partition: 0, offset: null }]);
    } finally {
      await member.close();
    }
  });

  it("refuses a zombie's writes with its commit, and its writes alone", async () => {
    const topic = unique("payments");
    const group = unique("eo-zombie");
    await createTopic(serve.url, topic, 2);
    const key = unique("total");
    const script = join(PACKAGE_ROOT, "dist", "test", "support", "member-process.js");
    const options = { topics: [topic], sessionTimeoutMs: SESSION_MS };
    const zombie = new JsonLinesProcess(process.execPath, [script, JSON.stringify({ url: serve.url, group, options })]);
    const other = Polled.start(serve.url, group, "other", new Timeline(), { protocol: "consumer" }, { topics: [topic], sessionTimeoutMs: SESSION_MS });
    try {
      await waitUntil(() => balanced([ownedBy(zombie), other.owned], allPartitions(topic, 2)), CONVERGE_MS, "two members balanced");
      zombie.send({ cmd: "commit", offset: 1, writes: [add(key, 1)] });
      await waitUntil(() => zombie.find((m) => m.commit !== undefined), CONVERGE_MS, "the member's commit");
      assert.equal((await counts())[key], 1, zombie.log());

      const since = zombie.messages.length;
      zombie.send({ cmd: "freeze-then-commit", offset: 99, writes: [add(key, 100)] });
      await waitUntil(() => zombie.find((m) => m.frozen !== undefined, since), CONVERGE_MS, "the member froze");
      await waitUntil(() => other.owned.length === 2, SESSION_MS + CONVERGE_MS, "the frozen member's partitions moved");
      await other.member.commit([], { writes: [add(key, 10)] });
      zombie.signal("SIGCONT");
      const alone = await waitUntil(() => zombie.find((m) => m.writesAlone !== undefined, since), CONVERGE_MS, "the zombie's commits");
      const withOffsets = zombie.find((m) => m.commit !== undefined, since);
      assert.equal(withOffsets?.errorClass, CommitFailed.name, zombie.log());
      assert.equal(alone.errorClass, CommitFailed.name, zombie.log());
      assert.equal((await counts())[key], 11, "a zombie's write landed");
      assert.deepEqual((await other.member.committed(allPartitions(topic, 2))).map((c) => c.offset).includes(99), false);
    } finally {
      await zombie.stop();
      await other.close();
    }
  });
});
