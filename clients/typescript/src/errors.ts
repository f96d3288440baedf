// What the client throws: one class per thing a caller can do something about, named as the
// Python client's (groupcoord.client.errors), and Kafka's error codes as answered in `errorCode`.

/** Kafka's error codes (org.apache.kafka.common.protocol.Errors) that the client reads. */
export const ErrorCode = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  REQUEST_TIMED_OUT: 7,
  OFFSET_METADATA_TOO_LARGE: 12,
  COORDINATOR_LOAD_IN_PROGRESS: 14,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  ILLEGAL_GENERATION: 22,
  INCONSISTENT_GROUP_PROTOCOL: 23,
  INVALID_GROUP_ID: 24,
  UNKNOWN_MEMBER_ID: 25,
  INVALID_SESSION_TIMEOUT: 26,
  REBALANCE_IN_PROGRESS: 27,
  INVALID_COMMIT_OFFSET_SIZE: 28,
  TOPIC_AUTHORIZATION_FAILED: 29,
  GROUP_AUTHORIZATION_FAILED: 30,
  CLUSTER_AUTHORIZATION_FAILED: 31,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_CONFIG: 40,
  INVALID_REQUEST: 42,
  INVALID_TXN_STATE: 48,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 53,
  NON_EMPTY_GROUP: 68,
  GROUP_ID_NOT_FOUND: 69,
  MEMBER_ID_REQUIRED: 79,
  GROUP_MAX_SIZE_REACHED: 81,
  FENCED_INSTANCE_ID: 82,
  GROUP_SUBSCRIBED_TO_TOPIC: 86,
  UNKNOWN_TOPIC_ID: 100,
  FENCED_MEMBER_EPOCH: 110,
  UNRELEASED_INSTANCE_ID: 111,
  UNSUPPORTED_ASSIGNOR: 112,
  STALE_MEMBER_EPOCH: 113,
  INVALID_REGULAR_EXPRESSION: 128,
} as const;

export type ErrorCodeName = keyof typeof ErrorCode;

const NAMES = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** The name of a Kafka error code (`ERROR_<n>` for one this client does not know). */
export function errorName(code: number): string {
  return NAMES.get(code) ?? `ERROR_${code}`;
}

/** The Kafka error code of an answer (or an entry of one); 0 when it has none. */
export function errorOf(entry: unknown): number {
  const code = (entry as { errorCode?: unknown } | null)?.errorCode;
  return typeof code === "number" && Number.isInteger(code) ? code : ErrorCode.NONE;
}

/** A call failed. `error` is Kafka's error code when the coordinator answered one, `status`
 * the HTTP status when the failure was an HTTP one. */
export class GroupcoordError extends Error {
  readonly error: number | undefined;
  readonly status: number | undefined;

  constructor(message: string, options: { error?: number; status?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.error = options.error;
    this.status = options.status;
  }
}

/** The coordinator could not be reached (or kept failing) within the call's deadline. Safe to
 * retry later. */
export class CoordinatorUnavailable extends GroupcoordError {}

/** The coordinator refused the request as malformed (HTTP 400): a bug or bad input. */
export class InvalidRequest extends GroupcoordError {}

/** The coordinator fenced a commit: this member no longer owns what it committed (the
 * partitions moved on). Do not retry; keep polling (the next poll() rejoins). */
export class CommitFailed extends GroupcoordError {}

/** One of a commit's writes failed its own condition (`index` in `writes`, DynamoDB's
 * `reason`): nothing was written, neither the writes nor the offsets. */
export class WriteConditionFailed extends GroupcoordError {
  readonly index: number;
  readonly reason: string;

  constructor(message: string, index: number, reason: string) {
    super(message, { error: ErrorCode.INVALID_TXN_STATE });
    this.index = index;
    this.reason = reason;
  }
}

/** Another process took this static member's instance id (or has not released it yet): this
 * one must stop. */
export class FencedInstance extends GroupcoordError {}

/** Commit errors that mean "this member's view of the group is stale": CommitFailed. */
export const FENCING_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.ILLEGAL_GENERATION,
  ErrorCode.UNKNOWN_MEMBER_ID,
  ErrorCode.FENCED_INSTANCE_ID,
  ErrorCode.STALE_MEMBER_EPOCH,
  ErrorCode.FENCED_MEMBER_EPOCH,
  ErrorCode.REBALANCE_IN_PROGRESS,
  ErrorCode.GROUP_ID_NOT_FOUND,
]);

/** The group's coordinator moved or is down: find it again, then retry. */
export const REDISCOVER_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
]);

/** Answers that a later attempt of the same request can succeed past. */
export const RETRIABLE_ERRORS: ReadonlySet<number> = new Set([
  ...REDISCOVER_ERRORS,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
]);
