// The parts without a network: Kafka's ConsumerProtocol bytes and the leader's assignors, each
// checked against the Python client's (run here), the sink's typed values, Retry-After, the
// write budget, the signing region, and the tests' own ownership check.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { describe, it } from "node:test";
import {
  ASSIGNORS,
  assignSticky,
  decodeStickyUserData,
  encodeCooperativeUserData,
  encodeStickyUserData,
  withCooperativeGeneration,
  withStickyMemory,
} from "../src/assignors.js";
import { decodeAssignment, decodeSubscription, encodeAssignment, encodeSubscription, subscription } from "../src/consumer-protocol.js";
import { sink } from "../src/index.js";
import { signingRegion } from "../src/sigv4.js";
import { budgetMs, retryAfterMs } from "../src/transport.js";
import { Timeline } from "./support/group.js";
import { python } from "./support/processes.js";

const b64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64");

/** Runs Python with groupcoord's client; `code` prints one JSON document from `data`. */
function pythonJson(code: string, data: unknown): any {
  const program = `import base64, json, sys\ndata = json.load(sys.stdin)\n${code}`;
  return JSON.parse(execFileSync(python(), ["-c", program], { input: JSON.stringify(data), encoding: "utf8" }));
}

describe("ConsumerProtocol encoding", () => {
  it("writes the bytes the Python client writes, and reads them back", () => {
    const sub = subscription({
      topics: ["orders", "audit"],
      userData: new Uint8Array([1, 2, 3]),
      ownedPartitions: new Map([["orders", [2, 0]], ["audit", [1]]]),
      generationId: 7,
      version: 2,
    });
    const assignment = { partitions: new Map([["orders", [0, 3]]]), userData: null, version: 0 };
    const sticky = encodeStickyUserData(new Map([["orders", [3, 1]]]), 5);
    const expected = pythonJson(
      `from groupcoord.wire.consumer_protocol import Assignment, Subscription, encode_assignment, encode_subscription
from groupcoord.client.assignors import encode_sticky_user_data
s = Subscription(["orders", "audit"], bytes([1, 2, 3]), {"orders": [2, 0], "audit": [1]}, 7, None, 2)
b = lambda raw: base64.b64encode(raw).decode()
print(json.dumps({"sub": b(encode_subscription(s)), "assignment": b(encode_assignment(Assignment({"orders": [0, 3]}))),
                  "sticky": b(encode_sticky_user_data({"orders": [3, 1]}, 5))}))`,
      null,
    );
    assert.deepEqual({ sub: b64(encodeSubscription(sub)), assignment: b64(encodeAssignment(assignment)), sticky: b64(sticky) }, expected);
    const decoded = decodeSubscription(Buffer.from(expected.sub, "base64"));
    assert.deepEqual(decoded.topics, ["orders", "audit"]);
    assert.deepEqual([...decoded.ownedPartitions], [["audit", [1]], ["orders", [2, 0]]]);
    assert.equal(decoded.generationId, 7);
    assert.deepEqual([...decodeAssignment(Buffer.from(expected.assignment, "base64")).partitions], [["orders", [0, 3]]]);
    assert.deepEqual(decodeStickyUserData(sticky), { partitions: new Map([["orders", [1, 3]]]), generation: 5 });
  });

  it("refuses truncated data, and reads an empty assignment as nothing", () => {
    assert.throws(() => decodeSubscription(encodeSubscription(subscription({ topics: ["t"] })).slice(0, 5)), /truncated/);
    assert.equal(decodeAssignment(new Uint8Array()).partitions.size, 0);
  });
});

interface Member {
  topics: string[];
  owned?: Record<string, number[]>;
  generation?: number;
  stickyMemory?: Record<string, number[]>;
}

const SCENARIOS: Array<{ name: string; members: Record<string, Member>; partitions: Record<string, number> }> = [
  { name: "two members, one topic", members: { a: { topics: ["t"] }, b: { topics: ["t"] } }, partitions: { t: 5 } },
  {
    name: "uneven subscriptions",
    members: { a: { topics: ["t", "u"] }, b: { topics: ["u"] }, c: { topics: ["t", "u", "v"] } },
    partitions: { t: 4, u: 3, v: 2 },
  },
  {
    name: "a newcomer beside an owner of everything",
    members: { a: { topics: ["t"], owned: { t: [0, 1, 2, 3, 4, 5] }, generation: 3 }, b: { topics: ["t"] } },
    partitions: { t: 6 },
  },
  {
    name: "two owners claiming one partition",
    members: { a: { topics: ["t"], owned: { t: [0, 1] }, generation: 4 }, b: { topics: ["t"], owned: { t: [1, 2] }, generation: 5 }, c: { topics: ["t"] } },
    partitions: { t: 6 },
  },
  {
    name: "a member that dropped a topic it still owns",
    members: { a: { topics: ["u"], owned: { t: [0, 1, 2], u: [0] }, generation: 7 }, b: { topics: ["t", "u"], owned: { u: [1] }, generation: 7 } },
    partitions: { t: 3, u: 2 },
  },
  {
    name: "one partition claimed by two members in one generation",
    members: { a: { topics: ["t"], owned: { t: [0, 1] }, generation: 5 }, b: { topics: ["t"], owned: { t: [0, 2] }, generation: 5 }, c: { topics: ["t"], generation: 5 } },
    partitions: { t: 3 },
  },
  {
    name: "unequal subscriptions beside an owner of everything",
    members: {
      a: { topics: ["t", "u", "v"], owned: { t: [0, 1, 2, 3], u: [0, 1, 2, 3], v: [0, 1, 2, 3] }, generation: 2 },
      b: { topics: ["t"] },
      c: { topics: ["t", "u"] },
    },
    partitions: { t: 4, u: 4, v: 4 },
  },
  {
    name: "eager sticky members remembering through userData",
    members: { a: { topics: ["t"], stickyMemory: { t: [3, 4, 5] } }, b: { topics: ["t"], stickyMemory: { t: [0, 1, 2] } }, c: { topics: ["t"] } },
    partitions: { t: 6 },
  },
  {
    // Kafka's StickyAssignorTest.testMemberDataWithInconsistentData: an eager sticky member's
    // claim is its userData alone, whatever its subscription's ownedPartitions say.
    name: "eager sticky members whose ownedPartitions disagree with their userData",
    members: { a: { topics: ["t"], owned: { t: [0, 1] }, generation: 5, stickyMemory: { t: [2, 3] } }, b: { topics: ["t"], stickyMemory: { t: [0, 1] } } },
    partitions: { t: 4 },
  },
];

function tsPlan(assignor: string, scenario: (typeof SCENARIOS)[number]): Record<string, Array<[string, number]>> {
  const subs = new Map(
    Object.entries(scenario.members).map(([id, m]) => {
      const userData = m.stickyMemory ? encodeStickyUserData(new Map(Object.entries(m.stickyMemory)), 2) : null;
      const sub = subscription({ topics: m.topics, ownedPartitions: new Map(Object.entries(m.owned ?? {})), generationId: m.generation ?? -1, userData });
      return [id, assignor === "sticky" ? withStickyMemory(sub) : sub];
    }),
  );
  const plan = (ASSIGNORS[assignor] as NonNullable<(typeof ASSIGNORS)[string]>)(subs, new Map(Object.entries(scenario.partitions)));
  return Object.fromEntries([...plan].map(([m, parts]) => [m, parts.map((tp): [string, number] => [tp.topic, tp.partition])]));
}

describe("the leader's assignors", () => {
  it("assign as the Python client's, in every scenario", () => {
    const cases = Object.keys(ASSIGNORS).flatMap((assignor) => SCENARIOS.map((scenario) => ({ assignor, scenario })));
    const expected = pythonJson(
      `from groupcoord.client.assignors import ASSIGNORS, encode_sticky_user_data, with_sticky_memory
from groupcoord.wire.consumer_protocol import Subscription
out = []
for case in data:
    subs = {}
    for mid, m in case["scenario"]["members"].items():
        memory = m.get("stickyMemory")
        user_data = encode_sticky_user_data(memory, 2) if memory else None
        s = Subscription(m["topics"], user_data, m.get("owned", {}), m.get("generation", -1))
        subs[mid] = with_sticky_memory(s) if case["assignor"] == "sticky" else s
    plan = ASSIGNORS[case["assignor"]](subs, case["scenario"]["partitions"])
    out.append({m: [[tp.topic, tp.partition] for tp in sorted(parts)] for m, parts in plan.items()})
print(json.dumps(out))`,
      cases,
    );
    cases.forEach(({ assignor, scenario }, i) => {
      const plan = tsPlan(assignor, scenario);
      const byPartition = (x: [string, number], y: [string, number]): number => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : x[1] - y[1]);
      const sortedPlan = Object.fromEntries(Object.entries(plan).map(([m, parts]) => [m, [...parts].sort(byPartition)]));
      assert.deepEqual(sortedPlan, expected[i], `${assignor}: ${scenario.name}`);
    });
  });

  it("cooperative-sticky never hands a partition straight from one owner to another", () => {
    const scenario = SCENARIOS[2] as (typeof SCENARIOS)[number];
    const plan = tsPlan("cooperative-sticky", scenario);
    assert.equal(plan.a?.length, 3, "the owner keeps its share");
    assert.deepEqual(plan.b, [], "the newcomer got a partition its owner still holds");
    assert.equal(tsPlan("sticky", scenario).b?.length, 3, "eager sticky moves them in one round");
  });

  it("sticky takes an eager member's claim from its userData alone", () => {
    const scenario = SCENARIOS.find((s) => s.name.startsWith("eager sticky members whose")) as (typeof SCENARIOS)[number];
    assert.deepEqual(tsPlan("sticky", scenario), { a: [["t", 2], ["t", 3]], b: [["t", 0], ["t", 1]] });
  });

  it("cooperative-sticky hands out nothing a member still holds: a dropped topic, a doubly claimed partition", () => {
    const byName = (name: string): (typeof SCENARIOS)[number] => SCENARIOS.find((s) => s.name === name) as (typeof SCENARIOS)[number];
    const dropped = tsPlan("cooperative-sticky", byName("a member that dropped a topic it still owns"));
    assert.deepEqual(dropped.b?.filter(([topic]) => topic === "t"), [], "b got a partition of t while a still holds it");
    const doubly = tsPlan("cooperative-sticky", byName("one partition claimed by two members in one generation"));
    assert.deepEqual(doubly, { a: [["t", 1]], b: [["t", 2]], c: [] }, "t-0 waits until both revoked it");
  });
});

describe("cooperative-sticky's userData", () => {
  it("is the generation, which a subscription without a generationId is read with", () => {
    // Kafka's testMemberDataWithInconsistentData / testAssignorWithOldVersionSubscriptions.
    assert.deepEqual([...encodeCooperativeUserData(7)], [0, 0, 0, 7]);
    const c1 = withCooperativeGeneration(subscription({ topics: ["t"], userData: encodeCooperativeUserData(5), ownedPartitions: new Map([["t", [0]]]), version: 1 }));
    const c2 = withCooperativeGeneration(subscription({ topics: ["t"], ownedPartitions: new Map([["t", [0]]]), generationId: 4, version: 2 }));
    assert.equal(c1.generationId, 5);
    const plan = assignSticky(new Map([["c1", c1], ["c2", c2]]), new Map([["t", 2]]), true);
    assert.deepEqual(plan.get("c1"), [{ topic: "t", partition: 0 }]);
    assert.deepEqual(plan.get("c2"), [{ topic: "t", partition: 1 }]);
  });
});

describe("range and roundrobin with static members", () => {
  it("order them by instance id, so a restart under a new member id changes no assignment", () => {
    // Kafka's testStaticMember{Range,RoundRobin}AssignmentPersistentAfterMemberIdChanges.
    const expected: Record<string, Record<string, Array<[string, number]>>> = {
      range: { instance1: [["topic1", 0], ["topic1", 1], ["topic2", 0], ["topic2", 1]], instance2: [["topic1", 2], ["topic1", 3], ["topic2", 2], ["topic2", 3]], instance3: [["topic1", 4], ["topic2", 4]] },
      roundrobin: { instance1: [["topic1", 0], ["topic1", 3], ["topic2", 1], ["topic2", 4]], instance2: [["topic1", 1], ["topic1", 4], ["topic2", 2]], instance3: [["topic1", 2], ["topic2", 0], ["topic2", 3]] },
    };
    const counts = new Map([["topic1", 5], ["topic2", 5]]);
    for (const name of ["range", "roundrobin"]) {
      for (const members of [{ consumer1: "instance1", consumer2: "instance2", consumer3: "instance3" }, { consumer1: "instance1", consumer5: "instance2", consumer4: "instance3" }]) {
        const subs = new Map(Object.entries(members).map(([m, instance]) => [m, subscription({ topics: ["topic1", "topic2"], groupInstanceId: instance })]));
        const plan = (ASSIGNORS[name] as NonNullable<(typeof ASSIGNORS)[string]>)(subs, counts);
        const byInstance = Object.fromEntries(Object.entries(members).map(([m, instance]) => [instance, (plan.get(m) ?? []).map((tp): [string, number] => [tp.topic, tp.partition])]));
        assert.deepEqual(byInstance, expected[name], `${name}: ${JSON.stringify(members)}`);
      }
    }
  });
});

describe("sink values", () => {
  it("are DynamoDB's typed JSON", () => {
    const write = sink.put("tbl", {
      s: "x", n: 1.5, big: 12345678901234567890n, exact: new sink.NumberValue("19.90"), yes: true, none: null,
      bytes: new Uint8Array([1, 2]), list: [1, "a"], map: { inner: 2 }, names: new Set(["b", "a"]), nums: new Set([2, 1]),
    }, { condition: "attribute_not_exists(s)", values: { ":v": 3 } });
    assert.deepEqual(write, {
      Put: {
        TableName: "tbl",
        Item: {
          s: { S: "x" }, n: { N: "1.5" }, big: { N: "12345678901234567890" }, exact: { N: "19.90" }, yes: { BOOL: true }, none: { NULL: true },
          bytes: { B: "AQI=" }, list: { L: [{ N: "1" }, { S: "a" }] }, map: { M: { inner: { N: "2" } } }, names: { SS: ["a", "b"] }, nums: { NS: ["1", "2"] },
        },
        ConditionExpression: "attribute_not_exists(s)",
        ExpressionAttributeValues: { ":v": { N: "3" } },
      },
    });
    assert.deepEqual(sink.delete("tbl", { k: "a" }), { Delete: { TableName: "tbl", Key: { k: { S: "a" } } } });
  });
});

describe("transport helpers", () => {
  it("read Retry-After as seconds or an HTTP date", () => {
    assert.equal(retryAfterMs("2"), 2000);
    assert.equal(retryAfterMs("0.5"), 500);
    const now = Date.parse("2026-01-01T00:00:00Z");
    assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:03 GMT", now), 3000);
    assert.equal(retryAfterMs("soon"), undefined);
    assert.equal(retryAfterMs(null), undefined);
  });

  it("send the attempt's timeout less the 2 s write margin as its budget", () => {
    assert.equal(budgetMs(10_000), 8000);
    assert.equal(budgetMs(1500), 1);
    assert.equal(budgetMs(3_600_000), 900_000);
  });

  it("sign for the execute-api host's region, else the environment's", () => {
    assert.equal(signingRegion("abc123.execute-api.eu-west-1.amazonaws.com", {}), "eu-west-1");
    assert.equal(signingRegion("coordinator.example.com", { AWS_REGION: "ap-south-1" }), "ap-south-1");
    assert.equal(signingRegion("coordinator.example.com", { AWS_DEFAULT_REGION: "us-west-2" }), "us-west-2");
    assert.equal(signingRegion("coordinator.example.com", {}), "us-east-1");
  });
});

describe("the tests' ownership check", () => {
  it("finds a partition taken while another member holds it", () => {
    const timeline = new Timeline();
    const tp = { topic: "t", partition: 0 };
    timeline.events.push({ at: 1, member: "a", kind: "assigned", partitions: [tp] });
    timeline.events.push({ at: 2, member: "b", kind: "assigned", partitions: [tp] });
    timeline.events.push({ at: 3, member: "a", kind: "revoked", partitions: [tp] });
    assert.deepEqual(timeline.overlaps(), ["t/0 taken by b while a holds it"]);
    timeline.events.splice(2, 1);
    timeline.events.push({ at: 1.5, member: "a", kind: "revoked", partitions: [tp] });
    assert.deepEqual(timeline.overlaps(), []);
  });
});
