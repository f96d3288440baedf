// Whole answers of the paged APIs, metadata and list-groups (groupcoord's paging extension: an
// answer holds a bounded page and `nextCursor` says where the next one starts). Each helper
// re-sends the request with `cursor` = the previous `nextCursor` until it is null and returns
// one body, as a server without paging would answer it.

import { GroupcoordError } from "./errors.js";
import type { Json } from "./validate.js";

/** Sends a request and resolves to the answer's body (e.g. `(api, body) =>
 * transport.call(api, body).then((r) => r.body)`). */
export type Call = (api: string, body: Json) => Promise<Json>;

export interface PageOptions {
  /** The most entries a page holds (metadata: partitions, at most 2,000; list-groups: groups,
   * at most 1,000); default the coordinator's. */
  pageSize?: number;
}

/** metadata of `topics` (null: every topic) over all its pages, a topic cut between two pages
 * joined into one entry. */
export async function metadataAllPages(call: Call, topics: Json[] | null = null, options: PageOptions = {}): Promise<Json> {
  const request: Json = { topics, ...(options.pageSize ? { responsePartitionLimit: options.pageSize } : {}) };
  let answer = await call("metadata", request);
  const merged: Json[] = [];
  for (;;) {
    for (const topic of answer.topics ?? []) joinOrAppend(merged, topic);
    const cursor = answer.nextCursor;
    if (cursor === null || cursor === undefined) return { ...answer, topics: merged };
    answer = await nextPage(call, "metadata", request, cursor);
  }
}

/** list-groups with Kafka's statesFilter / typesFilter over all its pages (an error answer of
 * a page as it is). */
export async function listGroupsAllPages(
  call: Call,
  options: PageOptions & { states?: string[]; types?: string[] } = {},
): Promise<Json> {
  const request: Json = {
    statesFilter: options.states ?? [],
    typesFilter: options.types ?? [],
    ...(options.pageSize ? { limit: options.pageSize } : {}),
  };
  let answer = await call("list-groups", request);
  const groups: Json[] = [];
  for (;;) {
    if ((answer.errorCode ?? 0) !== 0) return answer;
    groups.push(...(answer.groups ?? []));
    const cursor = answer.nextCursor;
    if (cursor === null || cursor === undefined) return { ...answer, groups };
    answer = await nextPage(call, "list-groups", request, cursor);
  }
}

async function nextPage(call: Call, api: string, request: Json, cursor: unknown): Promise<Json> {
  const answer = await call(api, { ...request, cursor });
  if (answer.nextCursor !== null && answer.nextCursor !== undefined && JSON.stringify(answer.nextCursor) === JSON.stringify(cursor)) {
    throw new GroupcoordError(`${api}: the coordinator answered the same page again`);
  }
  return answer;
}

/** A page starts with the rest of a topic the previous one cut: same name, same id. */
function joinOrAppend(merged: Json[], topic: Json): void {
  const last = merged[merged.length - 1];
  const sameTopic =
    last !== undefined &&
    (last.errorCode ?? 0) === 0 &&
    (topic.errorCode ?? 0) === 0 &&
    last.name === topic.name &&
    last.topicId === topic.topicId;
  if (sameTopic) {
    merged[merged.length - 1] = { ...last, partitions: [...last.partitions, ...topic.partitions] };
  } else {
    merged.push(topic);
  }
}
