// The classic protocol against a live `groupcoord serve`, with this client's leader-side
// assignors: cooperative-sticky (KIP-429) and eager range through the same scenarios as the
// consumer protocol.

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

const COOPERATIVE: ProtocolMode = { protocol: "classic", assignors: ["cooperative-sticky"] };
const EAGER: ProtocolMode = { protocol: "classic", assignors: ["range"] };

describe("classic protocol", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("cooperative-sticky: two members share a topic, only what moves is revoked", () => twoMembersShareATopic(serve.url, COOPERATIVE));
  it("eager range: two members share a topic, everything revoked first", () => twoMembersShareATopic(serve.url, EAGER));
  it("a frozen member's commit is fenced with CommitFailed and changes nothing", () => aFrozenMembersCommitIsFenced(serve.url, COOPERATIVE));
  it("close() hands the partitions over at once", () => closeHandsOverAtOnce(serve.url, COOPERATIVE));
  it("a static member restarts without a rebalance", () => aStaticMemberRestartsWithoutARebalance(serve.url, EAGER));
  it("a pattern subscription (matched by the client) picks up a new topic", () => aPatternPicksUpANewTopic(serve.url, COOPERATIVE));
});
