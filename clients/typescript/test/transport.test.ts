// What the network does to a client, against a live `groupcoord serve` behind a proxy: 429 and
// 5xx retried (Retry-After honoured), a 400 not retried, a request's write budget sent as
// Groupcoord-Timeout-Ms, an answer that never comes retried, an unreachable coordinator failing
// fast, a member rediscovering a coordinator that went away or answers NOT_COORDINATOR, and
// the paged APIs read whole.

import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, describe, it } from "node:test";
import { CoordinatorUnavailable, ErrorCode, GroupMember, InvalidRequest, Transport, listGroupsAllPages, metadataAllPages } from "../src/index.js";
import { CONSUMER_SESSION_MS, CONVERGE_MS, Polled, SETTINGS, Timeline, allPartitions, createTopic, unique, waitUntil } from "./support/group.js";
import { type Server, startServe } from "./support/processes.js";
import { Proxy } from "./support/proxy.js";

async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe("transport", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("retries a 429 after its Retry-After and 503s with backoff", async () => {
    const proxy = await Proxy.start(serve.url);
    try {
      proxy.rule = (_api, _body, seen) =>
        seen.length === 1 ? { kind: "answer", status: 429, headers: { "retry-after": "1" }, body: { errorCode: 7 } } : undefined;
      const started = Date.now();
      const reply = await new Transport(proxy.url).call("metadata", { topics: null });
      assert.equal(reply.status, 200);
      assert.ok(Date.now() - started >= 1000, "the retry came before Retry-After");
      assert.equal(proxy.seen.length, 2);

      proxy.seen.length = 0;
      proxy.rule = (_api, _body, seen) => (seen.length <= 2 ? { kind: "answer", status: 503, body: { errorCode: 7 } } : undefined);
      assert.equal((await new Transport(proxy.url).call("metadata", { topics: null })).status, 200);
      assert.equal(proxy.seen.length, 3);
    } finally {
      await proxy.close();
    }
  });

  it("does not retry a 400: InvalidRequest names the field", async () => {
    const proxy = await Proxy.start(serve.url);
    try {
      const call = new Transport(proxy.url).call("join-group", { groupId: unique("bad"), sessionTimeoutMs: "soon" });
      const error = await call.then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof InvalidRequest, String(error));
      assert.equal(error.status, 400);
      assert.match(error.message, /sessionTimeoutMs/);
      assert.equal(proxy.seen.length, 1);
    } finally {
      await proxy.close();
    }
  });

  it("tells the server each attempt's write budget and the client id", async () => {
    const proxy = await Proxy.start(serve.url);
    try {
      await new Transport(proxy.url, { timeoutMs: 5000, clientId: "five-seconds" }).call("metadata", { topics: null });
      await new Transport(proxy.url, { timeoutMs: 1500, clientId: "short" }).call("metadata", { topics: null });
      const budget = (client: string): unknown => proxy.seen.find((s) => s.headers["kafka-client-id"] === client)?.headers["groupcoord-timeout-ms"];
      assert.equal(budget("five-seconds"), "3000"); // the timeout less the 2 s write margin
      assert.equal(budget("short"), "1"); // shorter than the margin: the least
    } finally {
      await proxy.close();
    }
  });

  it("retries a commit whose answer never came (the coordinator had applied it)", async () => {
    const proxy = await Proxy.start(serve.url);
    const group = unique("lost-answer");
    const topic = unique("t");
    await createTopic(serve.url, topic, 1);
    try {
      proxy.rule = (api) => (api === "offset-commit" && proxy.count("offset-commit") === 1 ? { kind: "drop-answer" } : undefined);
      const member = new GroupMember(proxy.url, group, { topics: [topic], sessionTimeoutMs: CONSUMER_SESSION_MS });
      await waitUntil(() => member.poll(100).then((owned) => owned.length === 1), CONVERGE_MS, "the member owns the partition");
      await member.commit([{ topic, partition: 0, offset: 7 }]);
      assert.equal(proxy.count("offset-commit"), 2);
      assert.deepEqual(await member.committed([{ topic, partition: 0 }]), [{ topic, partition: 0, offset: 7 }]);
      await member.close();
    } finally {
      await proxy.close();
    }
  });

  it("abandons an attempt at its timeout and retries it", async () => {
    const proxy = await Proxy.start(serve.url);
    try {
      proxy.rule = (_api, _body, seen) => (seen.length === 1 ? { kind: "forward", holdMs: 30_000 } : undefined);
      const started = Date.now();
      await new Transport(proxy.url, { timeoutMs: 3000 }).call("metadata", { topics: null });
      assert.ok(proxy.seen.length >= 2, "the attempt was not retried");
      assert.ok(Date.now() - started < 20_000, "the client waited for the held answer");
    } finally {
      await proxy.close();
    }
  });

  it("fails fast and clearly when nothing listens", async () => {
    const url = await closedPort();
    const started = Date.now();
    const error = await new Transport(url, { timeoutMs: 500, retries: 2 }).call("metadata", {}).then(() => undefined, (e: unknown) => e);
    assert.ok(error instanceof CoordinatorUnavailable, String(error));
    assert.match(error.message, new RegExp(`${url} did not answer: ECONNREFUSED`));
    assert.ok(Date.now() - started < 3000);
  });

  it("a member finds its coordinator again when it goes away or answers NOT_COORDINATOR", async () => {
    const bootstrap = await Proxy.start(serve.url);
    const first = await Proxy.start(serve.url);
    const second = await Proxy.start(serve.url);
    bootstrap.coordinator = first.url;
    const topic = unique("moving");
    await createTopic(serve.url, topic, 2);
    const member = new GroupMember(bootstrap.url, unique("rediscover"), { topics: [topic], sessionTimeoutMs: CONSUMER_SESSION_MS });
    try {
      await waitUntil(() => member.poll(100).then((owned) => owned.length === 2), CONVERGE_MS, "the member owns both partitions");
      assert.ok(first.count("consumer-group-heartbeat") > 0);
      // The coordinator moves: the old endpoint refuses connections, find-coordinator names another.
      bootstrap.coordinator = second.url;
      await first.close();
      await waitUntil(() => member.poll(100).then(() => second.count("consumer-group-heartbeat") > 0), CONVERGE_MS, "heartbeats reach the new endpoint");
      assert.equal(member.assignment().length, 2, "the member lost its partitions");
      // NOT_COORDINATOR to a commit: found again (through the bootstrap URL) and retried.
      const lookups = bootstrap.count("find-coordinator");
      second.rule = (api) =>
        api === "offset-commit" && second.count("offset-commit") === 1
          ? { kind: "answer", status: 200, body: { errorCode: ErrorCode.NOT_COORDINATOR, topics: [], failedWrite: null } }
          : undefined;
      await member.commit(allPartitions(topic, 2).map((tp) => ({ ...tp, offset: 5 })));
      assert.equal(bootstrap.count("find-coordinator"), lookups + 1);
      assert.deepEqual((await member.committed(allPartitions(topic, 2))).map((c) => c.offset), [5, 5]);
    } finally {
      await member.close();
      await Promise.all([bootstrap.close(), second.close()]);
    }
  });

  it("a member cut off for a session timeout gives its partitions up as lost, then rejoins", async () => {
    const proxy = await Proxy.start(serve.url);
    const topic = unique("cut-off");
    await createTopic(serve.url, topic, 2);
    const timeline = new Timeline();
    const polled = Polled.start(proxy.url, unique("cut-off"), "m", timeline, { protocol: "consumer" }, { topics: [topic] });
    try {
      await waitUntil(() => polled.owned.length === 2, CONVERGE_MS, "the member owns both partitions");
      let cut = true;
      proxy.rule = () => (cut ? { kind: "answer", status: 503, body: { errorCode: 7 } } : undefined);
      const cutAt = Date.now();
      await waitUntil(() => timeline.since(cutAt).some((e) => e.kind === "lost"), CONSUMER_SESSION_MS + CONVERGE_MS, "the listener heard lost");
      assert.ok(Date.now() - cutAt >= CONSUMER_SESSION_MS - 500, "lost before a session timeout went by");
      assert.deepEqual(polled.owned, []);
      cut = false;
      await waitUntil(() => polled.owned.length === 2, CONVERGE_MS, "the member rejoined and owns both partitions again");
      assert.deepEqual(polled.errors, [], "poll() threw while the coordinator was unreachable");
    } finally {
      await polled.close();
      await proxy.close();
    }
  });

  it("reads every page of metadata and list-groups", async () => {
    const transport = new Transport(serve.url);
    const call = (api: string, body: object) => transport.call(api, body).then((r) => r.body);
    const topic = unique("wide");
    await createTopic(serve.url, topic, 7);
    const onePage = await call("metadata", { topics: [{ name: topic }], responsePartitionLimit: 3 });
    assert.notEqual(onePage.nextCursor, null, "the coordinator did not page");
    const whole = await metadataAllPages(call, [{ name: topic }], { pageSize: 3 });
    assert.equal(whole.topics.length, 1);
    assert.deepEqual(whole.topics[0].partitions.map((p: { partitionIndex: number }) => p.partitionIndex), [0, 1, 2, 3, 4, 5, 6]);

    const prefix = unique("listed");
    for (let i = 0; i < 5; i++) await transport.call("offset-commit", { groupId: `${prefix}-${i}`, topics: [{ name: topic, partitions: [{ partitionIndex: 0, committedOffset: 1 }] }] });
    const groups = await listGroupsAllPages(call, { pageSize: 2 });
    const ours = (groups.groups as Array<{ groupId: string }>).map((g) => g.groupId).filter((id) => id.startsWith(prefix));
    assert.deepEqual(ours.sort(), [0, 1, 2, 3, 4].map((i) => `${prefix}-${i}`));
  });
});
