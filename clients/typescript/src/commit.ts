// The bodies of offset-commit and offset-fetch, checked before they are sent, and what their
// answers say. A commit's verdict is every partition's errorCode and the answer's own (the one
// code a commit of writes alone carries: docs/exactly-once.md).

import { randomUUID } from "node:crypto";
import { ErrorCode, errorOf } from "./errors.js";
import { type Write, checkWrites } from "./sink.js";
import { PartitionSet, type TopicPartition, compareTopicPartitions } from "./topic-partition.js";
import { MAX_INT32, MAX_TOPIC_LENGTH, checkKnownKeys, describe, type Json, requiredString } from "./validate.js";

/** A partition and the next offset to read in it (what a commit records). */
export interface PartitionOffset extends TopicPartition {
  readonly offset: number;
}

/** A partition and its committed offset (null: nothing committed). */
export interface CommittedOffset extends TopicPartition {
  readonly offset: number | null;
}

export interface CommitOptions {
  /** committedMetadata of every partition of the commit. */
  metadata?: string | null;
  /** DynamoDB writes applied in one transaction with the offsets (build them with `sink`). */
  writes?: Write[];
}

export interface PreparedCommit {
  topics: Json[];
  /** `writes` and their idempotency key, the same on every retry of this commit. */
  extension: Json;
  empty: boolean;
}

const MOST_ITEMS = 98; // writes + distinct partitions (a transaction of 100 with the fence and marker)

export function checkPartition(tp: unknown, name: string): TopicPartition {
  if (typeof tp !== "object" || tp === null) throw new TypeError(`${name} must be {topic, partition}, got ${describe(tp)}`);
  const { topic, partition } = tp as Record<string, unknown>;
  requiredString(topic, `${name}.topic`, MAX_TOPIC_LENGTH);
  if (typeof partition !== "number" || !Number.isInteger(partition)) {
    throw new TypeError(`${name}.partition must be an integer, got ${describe(partition)}`);
  }
  if (partition < 0 || partition > MAX_INT32) throw new RangeError(`${name}.partition must be between 0 and ${MAX_INT32}`);
  return { topic: topic as string, partition };
}

export function prepareCommit(offsets: unknown, options: CommitOptions = {}): PreparedCommit {
  if (!Array.isArray(offsets)) throw new TypeError(`offsets must be an array of {topic, partition, offset}, got ${describe(offsets)}`);
  checkKnownKeys(options, ["metadata", "writes"], "commit options");
  const metadata = options.metadata ?? null;
  if (metadata !== null && typeof metadata !== "string") throw new TypeError(`metadata must be a string, got ${describe(metadata)}`);
  const seen = new PartitionSet();
  const entries = offsets.map((entry: unknown, i) => {
    const tp = checkPartition(entry, `offsets[${i}]`);
    const offset = (entry as Record<string, unknown>).offset;
    if (typeof offset !== "number" || !Number.isInteger(offset)) {
      throw new TypeError(`offsets[${i}].offset must be an integer, got ${describe(offset)}`);
    }
    if (offset < 0 || !Number.isSafeInteger(offset)) throw new RangeError(`offsets[${i}].offset must be a non-negative safe integer`);
    if (seen.has(tp)) throw new RangeError(`offsets names ${tp.topic}:${tp.partition} twice`);
    seen.add(tp);
    return { ...tp, offset };
  });
  const writes = options.writes === undefined ? [] : checkWrites(options.writes);
  if (writes.length > 0 && writes.length + entries.length > MOST_ITEMS) {
    throw new RangeError(`a commit with writes holds at most ${MOST_ITEMS} writes and partitions together`);
  }
  entries.sort(compareTopicPartitions);
  const byTopic = new Map<string, Json[]>();
  for (const { topic, partition, offset } of entries) {
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), { partitionIndex: partition, committedOffset: offset, committedMetadata: metadata }]);
  }
  // One key for this commit and all its retries, the transport's included.
  const extension = writes.length > 0 ? { writes, idempotencyKey: randomUUID().replaceAll("-", "") } : {};
  return {
    topics: [...byTopic].map(([name, partitions]) => ({ name, partitions })),
    extension,
    empty: entries.length === 0 && writes.length === 0,
  };
}

/** The error codes of a commit's answer, NONE left out, smallest first. */
export function commitCodes(body: Json): number[] {
  const codes = new Set<number>([errorOf(body)]);
  for (const topic of body.topics ?? []) for (const p of topic.partitions ?? []) codes.add(errorOf(p));
  codes.delete(ErrorCode.NONE);
  return [...codes].sort((a, b) => a - b);
}

export function fetchBody(groupId: string, partitions: unknown): Json | undefined {
  if (!Array.isArray(partitions)) throw new TypeError(`partitions must be an array of {topic, partition}, got ${describe(partitions)}`);
  const wanted = new PartitionSet(partitions.map((tp: unknown, i) => checkPartition(tp, `partitions[${i}]`)));
  if (wanted.size === 0) return undefined;
  const topics = [...wanted.byTopicSorted()].map(([name, partitionIndexes]) => ({ name, partitionIndexes }));
  return { groups: [{ groupId, topics }] };
}

/** The error codes of an offset-fetch answer's group, NONE left out, smallest first. */
export function fetchCodes(group: Json): number[] {
  const codes = new Set<number>([errorOf(group)]);
  for (const topic of group.topics ?? []) for (const p of topic.partitions ?? []) codes.add(errorOf(p));
  codes.delete(ErrorCode.NONE);
  return [...codes].sort((a, b) => a - b);
}

export function readCommitted(group: Json): CommittedOffset[] {
  const result: CommittedOffset[] = [];
  for (const topic of group.topics ?? []) {
    for (const p of topic.partitions ?? []) {
      const offset: number = p.committedOffset;
      result.push({ topic: topic.name, partition: p.partitionIndex, offset: offset < 0 ? null : offset });
    }
  }
  return result.sort(compareTopicPartitions);
}
