// groupcoord: a consumer-group member for both protocols of groupcoord's HTTP contract, its
// errors, the DynamoDB writes of an exactly-once commit, and the paging helpers.

export { GroupMember } from "./member.js";
export type { ClassicAssignor, GroupMemberOptions, Protocol, RebalanceListener } from "./options.js";
export type { CommitOptions, CommittedOffset, PartitionOffset } from "./commit.js";
export { PartitionSet, compareTopicPartitions, type TopicPartition } from "./topic-partition.js";
export {
  CommitFailed,
  CoordinatorUnavailable,
  ErrorCode,
  type ErrorCodeName,
  FencedInstance,
  GroupcoordError,
  InvalidRequest,
  WriteConditionFailed,
  errorName,
} from "./errors.js";
export { Transport, type CallOptions, type Reply, type TransportOptions } from "./transport.js";
export { listGroupsAllPages, metadataAllPages, type Call, type PageOptions } from "./paging.js";
export * as sink from "./sink.js";
export type { Write } from "./sink.js";
