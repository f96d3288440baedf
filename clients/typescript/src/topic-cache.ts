// What the member knows of the coordinator's topics (every page of `metadata`): names and ids
// for the consumer protocol's heartbeats, partition counts for the classic leader, and the
// topics a classic pattern matches.

import { type Call, metadataAllPages } from "./paging.js";
import { now } from "./timing.js";
import type { Json } from "./validate.js";

interface TopicInfo {
  id: string;
  partitions: number;
}

export class TopicCache {
  private byName = new Map<string, TopicInfo>();
  private readAt = -Infinity;

  constructor(
    private readonly call: Call,
    private readonly refreshMs: number,
  ) {}

  get stale(): boolean {
    return now() - this.readAt >= this.refreshMs;
  }

  async refresh(force = false): Promise<void> {
    if (!force && !this.stale) return;
    const answer = await metadataAllPages(this.call);
    const byName = new Map<string, TopicInfo>();
    for (const topic of (answer.topics ?? []) as Json[]) {
      if ((topic.errorCode ?? 0) === 0 && topic.name) {
        byName.set(topic.name, { id: topic.topicId, partitions: (topic.partitions ?? []).length });
      }
    }
    this.byName = byName;
    this.readAt = now();
  }

  /** The topics whose whole name `matcher` matches, sorted; re-read first when `refresh`
   * (else only when stale). */
  async matching(matcher: RegExp, refresh: boolean): Promise<string[]> {
    await this.refresh(refresh);
    return [...this.byName.keys()].filter((name) => matcher.test(name)).sort();
  }

  /** Partition counts as of now (a fresh read: the leader assigns from it). */
  async partitionCounts(topics: string[]): Promise<Map<string, number>> {
    await this.refresh(true);
    const counts = new Map<string, number>();
    for (const topic of topics) {
      const info = this.byName.get(topic);
      if (info !== undefined) counts.set(topic, info.partitions);
    }
    return counts;
  }

  async nameOf(topicId: string): Promise<string | undefined> {
    const find = (): string | undefined => [...this.byName].find(([, info]) => info.id === topicId)?.[0];
    const found = find();
    if (found !== undefined) return found;
    await this.refresh(true);
    return find();
  }

  async idOf(name: string): Promise<string | undefined> {
    if (!this.byName.has(name)) await this.refresh(true);
    return this.byName.get(name)?.id;
  }
}
