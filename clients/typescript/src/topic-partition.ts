// Topic partitions, and a set of them: JavaScript's Set compares objects by identity, so the
// client keeps partitions as topic -> partition numbers and hands out plain sorted arrays.

/** A partition of a topic. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** Orders by topic, then partition (as the Python client's sorted(TopicPartition)). */
export function compareTopicPartitions(a: TopicPartition, b: TopicPartition): number {
  if (a.topic !== b.topic) return a.topic < b.topic ? -1 : 1;
  return a.partition - b.partition;
}

/** A set of topic partitions with value semantics. */
export class PartitionSet {
  private readonly byTopic = new Map<string, Set<number>>();

  constructor(partitions: Iterable<TopicPartition> = []) {
    for (const tp of partitions) this.add(tp);
  }

  static of(byTopic: Record<string, readonly number[]> | Map<string, readonly number[]>): PartitionSet {
    const set = new PartitionSet();
    const entries = byTopic instanceof Map ? byTopic.entries() : Object.entries(byTopic);
    for (const [topic, partitions] of entries) {
      for (const partition of partitions) set.add({ topic, partition });
    }
    return set;
  }

  add(tp: TopicPartition): void {
    let partitions = this.byTopic.get(tp.topic);
    if (partitions === undefined) {
      partitions = new Set();
      this.byTopic.set(tp.topic, partitions);
    }
    partitions.add(tp.partition);
  }

  has(tp: TopicPartition): boolean {
    return this.byTopic.get(tp.topic)?.has(tp.partition) ?? false;
  }

  get size(): number {
    let size = 0;
    for (const partitions of this.byTopic.values()) size += partitions.size;
    return size;
  }

  /** Sorted, as fresh objects (callers may keep them). */
  toArray(): TopicPartition[] {
    const result: TopicPartition[] = [];
    for (const [topic, partitions] of this.byTopic) {
      for (const partition of partitions) result.push({ topic, partition });
    }
    return result.sort(compareTopicPartitions);
  }

  /** topic -> sorted partition numbers, topics in order (ConsumerProtocol's layout). */
  byTopicSorted(): Map<string, number[]> {
    const result = new Map<string, number[]>();
    for (const topic of [...this.byTopic.keys()].sort()) {
      const partitions = [...(this.byTopic.get(topic) ?? [])].sort((a, b) => a - b);
      if (partitions.length > 0) result.set(topic, partitions);
    }
    return result;
  }

  minus(other: PartitionSet): PartitionSet {
    return new PartitionSet(this.toArray().filter((tp) => !other.has(tp)));
  }

  equals(other: PartitionSet): boolean {
    return this.size === other.size && this.toArray().every((tp) => other.has(tp));
  }

  copy(): PartitionSet {
    return new PartitionSet(this.toArray());
  }
}
