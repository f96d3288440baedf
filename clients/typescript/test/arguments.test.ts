// Bad arguments are clear errors (TypeError / RangeError naming the argument) thrown before
// anything is sent: every call below is aimed at an endpoint that counts what reaches it.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { GroupMember, type GroupMemberOptions, Transport, sink } from "../src/index.js";

describe("bad arguments", () => {
  let url = "";
  let received = 0;
  const server = createServer((_req, res) => {
    received += 1;
    res.writeHead(500).end();
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    assert.equal(received, 0, "a request was sent");
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const member = (options: unknown, group: unknown = "g"): GroupMember => new GroupMember(url, group as string, options as GroupMemberOptions);

  it("to the GroupMember constructor", () => {
    const cases: Array<[() => unknown, ErrorConstructor, RegExp]> = [
      [() => new GroupMember("ftp://x", "g", { topics: ["t"] }), TypeError, /bootstrapUrl must be an http\(s\) URL/],
      [() => new GroupMember("not a url", "g", { topics: ["t"] }), TypeError, /bootstrapUrl is not a URL/],
      [() => member({ topics: ["t"] }, ""), RangeError, /groupId must not be empty/],
      [() => member({ topics: ["t"] }, 42), TypeError, /groupId must be a string/],
      [() => member({ topics: ["t"] }, "g".repeat(256)), RangeError, /groupId must be at most 255/],
      [() => member(undefined), TypeError, /options must say what to subscribe to/],
      [() => member({}), TypeError, /exactly one of topics/],
      [() => member({ topics: ["t"], pattern: "t.*" }), TypeError, /exactly one of topics/],
      [() => member({ topics: "orders" }), TypeError, /topics must be an array/],
      [() => member({ topics: [] }), RangeError, /topics must name at least one topic/],
      [() => member({ topics: ["ok", ""] }), RangeError, /topics\[1\] must not be empty/],
      [() => member({ pattern: "(" }), SyntaxError, /pattern: not a valid regular expression/],
      [() => member({ pattern: /orders/i }), TypeError, /pattern: flags \(i\)/],
      [() => member({ topics: ["t"], protocol: "kafka" }), TypeError, /protocol must be "consumer" or "classic"/],
      [() => member({ topics: ["t"], protocol: "classic", assignors: ["sticky", "fair"] }), RangeError, /unknown assignor\(s\) \["fair"\]/],
      [() => member({ topics: ["t"], protocol: "classic", assignors: [] }), TypeError, /assignors must be a non-empty array/],
      [() => member({ topics: ["t"], assignors: ["range"] }), TypeError, /assignors are for the classic protocol/],
      [() => member({ topics: ["t"], protocol: "classic", serverAssignor: "uniform" }), TypeError, /serverAssignor is for the consumer protocol/],
      [() => member({ topics: ["t"], heartbeatIntervalMs: 100 }), TypeError, /heartbeatIntervalMs is for the classic protocol/],
      [() => member({ topics: ["t"], protocol: "classic", sessionTimeoutMs: 6000, heartbeatIntervalMs: 6000 }), RangeError, /heartbeatIntervalMs must be below sessionTimeoutMs/],
      [() => member({ topics: ["t"], sessionTimeoutMs: -1 }), RangeError, /sessionTimeoutMs must be between 1 and/],
      [() => member({ topics: ["t"], sessionTimeoutMs: 1.5 }), TypeError, /sessionTimeoutMs must be an integer/],
      [() => member({ topics: ["t"], requestTimeoutMs: 0 }), RangeError, /requestTimeoutMs must be a positive/],
      [() => member({ topics: ["t"], instanceId: "" }), RangeError, /instanceId must not be empty/],
      [() => member({ topics: ["t"], clientId: "c".repeat(219) }), RangeError, /clientId must be at most 218/],
      [() => member({ topics: ["t"], listener: { onPartitionsAssigned: "log" } }), TypeError, /listener.onPartitionsAssigned must be a function/],
      [() => member({ topics: ["t"], sessionTimeout: 6000 }), TypeError, /unknown option\(s\) sessionTimeout/],
      [() => member({ topics: ["t"], sign: "yes" }), TypeError, /sign must be a boolean/],
      [() => new Transport(url, { retries: -1 }), RangeError, /retries must be a non-negative/],
      [() => new Transport(`${url}?x=1`), TypeError, /must not have a query/],
    ];
    for (const [call, errorClass, message] of cases) assert.throws(call, (e: unknown) => e instanceof errorClass && message.test((e as Error).message), String(call));
  });

  it("to poll, commit, commitAsync and committed", async () => {
    const m = member({ topics: ["t"] });
    const tp = { topic: "t", partition: 0 };
    await assert.rejects(m.poll(-1), RangeError);
    await assert.rejects(m.poll(Number.NaN), RangeError);
    const cases: Array<[unknown, unknown, ErrorConstructor, RegExp]> = [
      [{ t: 1 }, {}, TypeError, /offsets must be an array/],
      [[{ ...tp }], {}, TypeError, /offsets\[0\].offset must be an integer/],
      [[{ ...tp, offset: -1 }], {}, RangeError, /offsets\[0\].offset must be a non-negative/],
      [[{ ...tp, offset: 1.5 }], {}, TypeError, /offsets\[0\].offset must be an integer/],
      [[{ topic: "t", partition: -2, offset: 1 }], {}, RangeError, /offsets\[0\].partition must be between 0/],
      [[{ partition: 0, offset: 1 }], {}, TypeError, /offsets\[0\].topic must be a string/],
      [[{ ...tp, offset: 1 }, { ...tp, offset: 2 }], {}, RangeError, /names t:0 twice/],
      [[{ ...tp, offset: 1 }], { metadata: 7 }, TypeError, /metadata must be a string/],
      [[{ ...tp, offset: 1 }], { writes: {} }, TypeError, /writes must be an array/],
      [[{ ...tp, offset: 1 }], { writes: [{ Put: {}, Delete: {} }] }, TypeError, /writes\[0\] must be one of Put, Update, Delete, ConditionCheck/],
      [[], { writes: Array(99).fill(sink.put("tbl", { k: "a" })) }, RangeError, /at most 98/],
      [[{ ...tp, offset: 1 }], { write: [] }, TypeError, /unknown option\(s\) write/],
    ];
    for (const [offsets, options, errorClass, message] of cases) {
      const matches = (e: unknown): boolean => e instanceof errorClass && message.test((e as Error).message);
      await assert.rejects(m.commit(offsets as never, options as never), matches, JSON.stringify(offsets));
      await assert.rejects(m.commitAsync(offsets as never, options as never), matches, JSON.stringify(offsets));
    }
    await assert.rejects(m.committed("t" as never), TypeError);
    await assert.rejects(m.committed([{ topic: "t" }] as never), /partitions\[0\].partition must be an integer/);
    await m.close();
  });

  it("to the sink builders", () => {
    assert.throws(() => sink.put("x", { k: 1 }), /table: not a DynamoDB table name/);
    assert.throws(() => sink.put("tbl", { k: Number.NaN }), /item.k: DynamoDB numbers must be finite/);
    assert.throws(() => sink.put("tbl", { k: new Set() }), /item.k: DynamoDB sets cannot be empty/);
    assert.throws(() => sink.put("tbl", { k: new Set(["a", 1]) }), /all of one kind/);
    assert.throws(() => sink.put("tbl", { k: undefined }), /item.k: no DynamoDB type for undefined/);
    assert.throws(() => sink.update("tbl", { k: "a" }, ""), /expression must be a non-empty string/);
    assert.throws(() => new sink.NumberValue("12,5"), /not a decimal number/);
  });
});
