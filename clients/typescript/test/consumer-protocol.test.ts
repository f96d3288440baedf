// The consumer protocol (KIP-848) against a live `groupcoord serve`: two members sharing a
// topic, a rebalance, a fenced zombie, a leave that hands over at once, static membership and
// a pattern subscription.

import { after, before, describe, it } from "node:test";
import { SETTINGS, type ProtocolMode } from "./support/group.js";
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
});
