// The consumer protocol (KIP-848) against a live `groupcoord serve`: two members sharing a
// topic, a rebalance, a fenced zombie, a leave that hands over at once, static membership and
// a pattern subscription.

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { GroupMember } from "../src/index.js";
import { CONSUMER_SESSION_MS, CONVERGE_MS, SETTINGS, type ProtocolMode, createTopic, unique, waitUntil } from "./support/group.js";
import { type Server, startServe } from "./support/processes.js";
import {
  aFrozenMembersCommitIsFenced,
  aPatternPicksUpANewTopic,
  aStaticMemberRestartsWithoutARebalance,
  closeHandsOverAtOnce,
  twoMembersShareATopic,
} from "./support/scenarios.js";

const MODE: ProtocolMode = { protocol: "consumer" };

describe("consumer protocol", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("two members share a topic, rebalanced without a partition held twice", () => twoMembersShareATopic(serve.url, MODE));
  it("a frozen member's commit is fenced with CommitFailed and changes nothing", () => aFrozenMembersCommitIsFenced(serve.url, MODE));
  it("close() hands the partitions over at once", () => closeHandsOverAtOnce(serve.url, MODE));
  it("a static member restarts without a rebalance", () => aStaticMemberRestartsWithoutARebalance(serve.url, MODE));
  it("a pattern subscription picks up a new matching topic", () => aPatternPicksUpANewTopic(serve.url, MODE));

  it("refuses poll() and close() inside a listener callback rather than hanging", async () => {
    const topic = unique("reentry");
    await createTopic(serve.url, topic, 1);
    const refused: string[] = [];
    const member: GroupMember = new GroupMember(serve.url, unique("reentry"), {
      topics: [topic],
      sessionTimeoutMs: CONSUMER_SESSION_MS,
      listener: {
        async onPartitionsAssigned() {
          await member.poll().catch((e: Error) => refused.push(e.message));
          await member.close().catch((e: Error) => refused.push(e.message));
        },
      },
    });
    await waitUntil(() => member.poll(100).then((owned) => owned.length === 1), CONVERGE_MS, "the member owns its partition");
    assert.equal(refused.length, 2, refused.join("; "));
    assert.match(refused[0] as string, /poll\(\) is already running/);
    assert.match(refused[1] as string, /close\(\) inside a rebalance listener callback/);
    await member.close();
  });
});
