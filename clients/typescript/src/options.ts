// GroupMember's options, checked and given their defaults before anything is sent: a wrong
// kind is a TypeError, a value out of bounds a RangeError, each naming the option.

import { ASSIGNORS } from "./assignors.js";
import type { PushLogger } from "./push.js";
import type { TopicPartition } from "./topic-partition.js";
import {
  MAX_ID_LENGTH,
  MAX_INT32,
  MAX_TOPIC_LENGTH,
  checkKnownKeys,
  describe,
  integerIn,
  optionalBoolean,
  optionalString,
  positiveNumber,
  requiredString,
} from "./validate.js";

/** Called inside poll() (and close()); each gets a non-empty, sorted array. May be async: the
 * member waits for it (keep it shorter than the session timeout). */
export interface RebalanceListener {
  /** The member is about to give these up: commit what you processed (the commit still carries
   * the current generation or epoch, so it is accepted). */
  onPartitionsRevoked?(partitions: TopicPartition[]): void | Promise<void>;
  /** The member owns these now: read committed() to resume. */
  onPartitionsAssigned?(partitions: TopicPartition[]): void | Promise<void>;
  /** The membership was lost (expired, fenced, unreachable for a session timeout): the
   * partitions may already be someone else's, so do not commit them. */
  onPartitionsLost?(partitions: TopicPartition[]): void | Promise<void>;
}

export type Protocol = "consumer" | "classic";
export type ClassicAssignor = "range" | "roundrobin" | "sticky" | "cooperative-sticky";

export interface GroupMemberOptions {
  /** The topics to subscribe to (exactly one of `topics` and `pattern`). */
  topics?: string[];
  /** The topics whose whole name matches: the coordinator matches it (RE2) with the consumer
   * protocol, the client (a JavaScript RegExp) with the classic one. */
  pattern?: string | RegExp;
  /** "consumer" (KIP-848, the default) or "classic". */
  protocol?: Protocol;
  /** Classic: the leader's assignors in order of preference (default ["range"]). */
  assignors?: ClassicAssignor[];
  /** Consumer protocol: the coordinator's assignor, "uniform" or "range" (default the group's). */
  serverAssignor?: string;
  listener?: RebalanceListener;
  /** Static membership (KIP-345). */
  instanceId?: string;
  /** Classic: sent with the join. Consumer protocol: set it to the coordinator's
   * group.consumer.session.timeout.ms (how long the client keeps partitions it cannot renew). */
  sessionTimeoutMs?: number;
  rebalanceTimeoutMs?: number;
  /** Classic only (default session / 3); the consumer protocol's is the coordinator's. */
  heartbeatIntervalMs?: number;
  /** Classic with a pattern: how often topics are re-matched (default 5,000 ms). */
  metadataRefreshMs?: number;
  /** Sent as Kafka-Client-Id (default "groupcoord-client"). */
  clientId?: string;
  /** Each request attempt's timeout (default 10,000 ms). */
  requestTimeoutMs?: number;
  /** SigV4-sign requests (default: for an https URL). */
  sign?: boolean;
  /** The API's region for signing (default: the execute-api host's, else AWS_REGION). */
  region?: string;
  /** Sent with every request (e.g. a local serve's --principal-header, a test aid). */
  headers?: Record<string, string>;
  /** Use the push channel when find-coordinator offers one (default true). */
  push?: boolean;
  /** Consumer protocol: the heartbeat interval while the push socket is open (default 15,000
   * ms, at most 3 of the coordinator's intervals): a liveness backup, push carries changes. */
  pushHeartbeatIntervalMs?: number;
  /** Where the push channel's lines go (falling back to polling, connected again); default:
   * warnings to console.warn, info lines nowhere. */
  logger?: PushLogger;
}

export interface MemberSettings {
  groupId: string;
  topics: string[] | undefined;
  pattern: string | undefined; // sent to the coordinator (consumer protocol)
  matcher: RegExp | undefined; // matched here (classic)
  protocol: Protocol;
  assignors: string[];
  serverAssignor: string | undefined;
  listener: RebalanceListener;
  instanceId: string | undefined;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number | undefined;
  metadataRefreshMs: number;
  clientId: string;
  requestTimeoutMs: number;
  sign: boolean | undefined;
  region: string | undefined;
  headers: Record<string, string> | undefined;
  push: boolean;
  pushHeartbeatIntervalMs: number;
  logger: PushLogger;
}

const KNOWN = [
  "topics", "pattern", "protocol", "assignors", "serverAssignor", "listener", "instanceId", "sessionTimeoutMs",
  "rebalanceTimeoutMs", "heartbeatIntervalMs", "metadataRefreshMs", "clientId", "requestTimeoutMs", "sign", "region", "headers",
  "push", "pushHeartbeatIntervalMs", "logger",
];

export function memberSettings(groupId: unknown, options: GroupMemberOptions): MemberSettings {
  const id = requiredString(groupId, "groupId", MAX_ID_LENGTH);
  checkKnownKeys(options, KNOWN, "GroupMember options");
  const protocol = options.protocol ?? "consumer";
  if (protocol !== "consumer" && protocol !== "classic") {
    throw new TypeError(`protocol must be "consumer" or "classic", got ${describe(protocol)}`);
  }
  const classic = protocol === "classic";
  const sessionTimeoutMs = integerIn(options.sessionTimeoutMs, "sessionTimeoutMs", 1, MAX_INT32) ?? 45_000;
  const heartbeatIntervalMs = integerIn(options.heartbeatIntervalMs, "heartbeatIntervalMs", 1, MAX_INT32);
  if (heartbeatIntervalMs !== undefined && !classic) {
    throw new TypeError("heartbeatIntervalMs is for the classic protocol: the consumer protocol's is the coordinator's");
  }
  if (heartbeatIntervalMs !== undefined && heartbeatIntervalMs >= sessionTimeoutMs) {
    throw new RangeError("heartbeatIntervalMs must be below sessionTimeoutMs");
  }
  if (options.assignors !== undefined && !classic) {
    throw new TypeError('assignors are for the classic protocol; the consumer protocol takes serverAssignor');
  }
  if (options.serverAssignor !== undefined && classic) {
    throw new TypeError("serverAssignor is for the consumer protocol; the classic protocol takes assignors");
  }
  const { pattern, matcher } = checkPattern(options.pattern);
  return {
    groupId: id,
    topics: checkSubscription(options.topics, options.pattern),
    pattern,
    matcher,
    protocol,
    assignors: checkAssignors(options.assignors),
    serverAssignor: optionalString(options.serverAssignor, "serverAssignor", MAX_ID_LENGTH),
    listener: checkListener(options.listener),
    instanceId: optionalString(options.instanceId, "instanceId", MAX_ID_LENGTH),
    sessionTimeoutMs,
    rebalanceTimeoutMs: integerIn(options.rebalanceTimeoutMs, "rebalanceTimeoutMs", 1, MAX_INT32) ?? 300_000,
    heartbeatIntervalMs,
    metadataRefreshMs: integerIn(options.metadataRefreshMs, "metadataRefreshMs", 1, MAX_INT32) ?? 5000,
    clientId: optionalString(options.clientId, "clientId", 218) ?? "groupcoord-client",
    requestTimeoutMs: positiveNumber(options.requestTimeoutMs, "requestTimeoutMs") ?? 10_000,
    sign: optionalBoolean(options.sign, "sign"),
    region: optionalString(options.region, "region", 64),
    headers: options.headers,
    push: optionalBoolean(options.push, "push") ?? true,
    pushHeartbeatIntervalMs: integerIn(options.pushHeartbeatIntervalMs, "pushHeartbeatIntervalMs", 1, MAX_INT32) ?? 15_000,
    logger: checkLogger(options.logger),
  };
}

// By default warnings go to stderr and info lines nowhere (as Python's logging does unless
// configured): a library does not write on its user's stdout.
const QUIET_INFO: PushLogger = { info: () => undefined, warn: (message) => console.warn(message) };

function checkLogger(logger: unknown): PushLogger {
  if (logger === undefined) return QUIET_INFO;
  const fields = logger as Partial<PushLogger> | null;
  if (typeof fields?.info !== "function" || typeof fields.warn !== "function") {
    throw new TypeError(`logger must have info(message) and warn(message), got ${describe(logger)}`);
  }
  return logger as PushLogger;
}

function checkSubscription(topics: unknown, pattern: unknown): string[] | undefined {
  if ((topics === undefined) === (pattern === undefined)) {
    throw new TypeError("subscribe with exactly one of topics: [...] or pattern: '...'");
  }
  if (topics === undefined) return undefined;
  if (!Array.isArray(topics)) throw new TypeError(`topics must be an array of topic names, got ${describe(topics)}`);
  if (topics.length === 0) throw new RangeError("topics must name at least one topic");
  if (topics.length > 1000) throw new RangeError("topics: at most 1000 topics");
  topics.forEach((t, i) => requiredString(t, `topics[${i}]`, MAX_TOPIC_LENGTH));
  return [...new Set(topics as string[])].sort();
}

function checkPattern(pattern: unknown): { pattern: string | undefined; matcher: RegExp | undefined } {
  if (pattern === undefined) return { pattern: undefined, matcher: undefined };
  let source: string;
  let flags = "";
  if (pattern instanceof RegExp) {
    if (pattern.flags.replace(/[uv]/g, "") !== "") {
      throw new TypeError(`pattern: flags (${pattern.flags}) cannot be sent to the coordinator; write them into the pattern`);
    }
    source = pattern.source;
    flags = pattern.flags;
  } else {
    source = requiredString(pattern, "pattern", 1024);
  }
  try {
    return { pattern: source, matcher: new RegExp(`^(?:${source})$`, flags) };
  } catch (error) {
    throw new SyntaxError(`pattern: not a valid regular expression: ${(error as Error).message}`);
  }
}

function checkAssignors(assignors: unknown): string[] {
  if (assignors === undefined) return ["range"];
  if (!Array.isArray(assignors) || assignors.length === 0) {
    throw new TypeError(`assignors must be a non-empty array of assignor names, got ${describe(assignors)}`);
  }
  const unknown = assignors.filter((a) => typeof a !== "string" || !(a in ASSIGNORS));
  if (unknown.length > 0) {
    throw new RangeError(`unknown assignor(s) ${JSON.stringify(unknown)}; choose from ${Object.keys(ASSIGNORS).join(", ")}`);
  }
  return [...assignors] as string[];
}

function checkListener(listener: unknown): RebalanceListener {
  if (listener === undefined || listener === null) return {};
  if (typeof listener !== "object") throw new TypeError(`listener must be an object, got ${describe(listener)}`);
  for (const name of ["onPartitionsRevoked", "onPartitionsAssigned", "onPartitionsLost"]) {
    const callback = (listener as Record<string, unknown>)[name];
    if (callback !== undefined && typeof callback !== "function") throw new TypeError(`listener.${name} must be a function`);
  }
  return listener as RebalanceListener;
}
