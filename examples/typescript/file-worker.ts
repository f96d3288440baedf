// A worker that shares a partitioned source with the other workers of its group: the
// TypeScript twin of examples/file_worker.py, and a member of the same groups (run one of each).
//
// The source is a folder with one file per partition (0.txt, 1.txt, ...); each line is a record
// and its line number (from 0) is its offset. Every worker of the group gets some of the
// partitions from the coordinator, processes their lines from the group's committed offset on,
// and commits as it goes; lines appended later are picked up. Stop one (Ctrl-C) and its
// partitions go to the others at once.
//
//   node dist/file-worker.js ./data --group demo --name a
//
// Processing here is "print it" (and, with --output, append a JSON line per record to a file),
// committed after each batch: at-least-once, as a Kafka consumer that commits after processing.

import { appendFileSync, closeSync, openSync, readdirSync, readSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CommitFailed, GroupMember, GroupcoordError, type TopicPartition, Transport, metadataAllPages } from "groupcoord";

const USAGE = `usage: node dist/file-worker.js FOLDER [options]

Share FOLDER's partition files (0.txt, 1.txt, ...) with the other workers of --group.

options:
  --url URL                  the coordinator (default: $GROUPCOORD_URL, else http://127.0.0.1:8080)
  --group ID                 the group (default: file-workers)
  --topic NAME               the topic (default: the folder's name)
  --name NAME                this worker's client id (default: worker-<pid>)
  --protocol P               consumer (default) or classic (cooperative-sticky)
  --batch N                  lines per commit (default: 10)
  --delay S                  seconds of "work" per line (default: 0.2)
  --output FILE              append a JSON line per processed record
  --session-timeout-ms MS    (default: 10000)
  --heartbeat-interval-ms MS classic protocol only (default: 1000)
  --quiet                    print assignment changes only
  -h, --help                 print this and exit`;

function parseCommandLine(): ReturnType<typeof parseOptions> {
  try {
    return parseOptions();
  } catch (error) {
    // A mistyped option: one line and the usage, not a stack trace.
    console.error(`file-worker: ${(error as Error).message}\n\n${USAGE}`);
    process.exit(2);
  }
}

function parseOptions() {
  return parseArgs({
    allowPositionals: true,
    options: {
      url: { type: "string", default: process.env.GROUPCOORD_URL ?? "http://127.0.0.1:8080" },
      group: { type: "string", default: "file-workers" },
      topic: { type: "string" }, // default: the folder's name
      name: { type: "string", default: `worker-${process.pid}` },
      protocol: { type: "string", default: "consumer" }, // or classic
      batch: { type: "string", default: "10" }, // lines per commit
      delay: { type: "string", default: "0.2" }, // seconds of "work" per line
      output: { type: "string" }, // append a JSON line per processed record
      "session-timeout-ms": { type: "string", default: "10000" },
      "heartbeat-interval-ms": { type: "string", default: "1000" }, // classic protocol only
      quiet: { type: "boolean", default: false }, // print assignment changes only
      help: { type: "boolean", short: "h", default: false },
    },
  });
}

const { values: args, positionals } = parseCommandLine();
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}

/** Reads complete lines of one file from a line number on, remembering where it is. */
class PartitionReader {
  line = 0;
  private byte = 0;

  constructor(
    private readonly path: string,
    start: number,
  ) {
    while (this.line < start && this.read(start - this.line).length > 0);
  }

  /** Up to `limit` complete lines (a line still being written waits). */
  read(limit: number): string[] {
    const fd = openSync(this.path, "r");
    try {
      const buffer = Buffer.alloc(64 * 1024);
      const size = readSync(fd, buffer, 0, buffer.length, this.byte);
      const lines: string[] = [];
      let start = 0;
      for (let end = buffer.indexOf(10, 0); end !== -1 && end < size && lines.length < limit; end = buffer.indexOf(10, start)) {
        lines.push(buffer.subarray(start, end).toString("utf8"));
        start = end + 1;
      }
      this.byte += start;
      this.line += lines.length;
      return lines;
    } finally {
      closeSync(fd);
    }
  }
}

function partitionFiles(source: string): Map<number, string> {
  const files = new Map<number, string>();
  for (const name of readdirSync(source)) {
    const match = /^(\d+)\.txt$/.exec(name);
    if (match) files.set(Number(match[1]), join(source, name));
  }
  if (files.size === 0 || [...files.keys()].some((p) => p >= files.size)) {
    console.error(`${source}: expected files 0.txt .. N.txt, one per partition`);
    process.exit(1);
  }
  return files;
}

/** Creates the topic with a partition per file, or grows it to that many. */
async function ensureTopic(url: string, topic: string, partitions: number): Promise<void> {
  const admin = new Transport(url, { clientId: "file-worker" });
  const created = (await admin.call("create-topics", { topics: [{ name: topic, numPartitions: partitions }] })).body.topics[0];
  if (created.errorCode === 0) return console.log(`created topic ${topic} with ${partitions} partitions`);
  const answer = await metadataAllPages((api, body) => admin.call(api, body).then((r) => r.body), [{ name: topic }]);
  if (answer.topics[0].partitions.length < partitions) {
    await admin.call("create-partitions", { topics: [{ name: topic, count: partitions }] });
  }
}

const show = (partitions: Iterable<TopicPartition>): string => `[${[...partitions].map((tp) => tp.partition).sort((a, b) => a - b).join(",")}]`;

async function main(): Promise<void> {
  const source = resolve(positionals[0] ?? ".");
  const files = partitionFiles(source);
  const topic = args.topic ?? basename(source);
  const say = (text: string): void => console.log(`[${args.name}] ${text}`);
  await ensureTopic(args.url, topic, files.size);
  const readers = new Map<number, PartitionReader>(); // partition -> where we are
  const classic = args.protocol === "classic";
  const member: GroupMember = new GroupMember(args.url, args.group, {
    topics: [topic],
    protocol: classic ? "classic" : "consumer",
    ...(classic ? { assignors: ["cooperative-sticky"], heartbeatIntervalMs: Number(args["heartbeat-interval-ms"]) } : {}),
    sessionTimeoutMs: Number(args["session-timeout-ms"]),
    clientId: args.name,
    listener: {
      async onPartitionsAssigned(partitions) {
        const committed = await member.committed(partitions);
        for (const c of committed) readers.set(c.partition, new PartitionReader(files.get(c.partition) as string, c.offset ?? 0));
        say(`assigned ${committed.map((c) => `${c.partition}@${c.offset ?? 0}`).join(", ")}  (now owns ${show(member.assignment())})`);
      },
      async onPartitionsRevoked(partitions) {
        // Commit where we are before someone else takes over.
        const positions = partitions.flatMap((tp) => (readers.has(tp.partition) ? [{ ...tp, offset: (readers.get(tp.partition) as PartitionReader).line }] : []));
        await member.commit(positions).catch((error: unknown) => say(`could not commit on revocation: ${String(error)}`));
        for (const tp of partitions) readers.delete(tp.partition);
        say(`revoked ${show(partitions)}`);
      },
      onPartitionsLost(partitions) {
        // Someone else may own them already: drop them without committing.
        for (const tp of partitions) readers.delete(tp.partition);
        say(`lost ${show(partitions)}`);
      },
    },
  });
  let stopping = false;
  process.on("SIGINT", () => (stopping = true));
  process.on("SIGTERM", () => (stopping = true));
  say(`joining group ${args.group} on ${args.url}, topic ${topic}`);
  try {
    let idle = false;
    while (!stopping) {
      await member.poll(idle ? 500 : 0);
      idle = !(await processABatchEach(member, topic, readers, () => stopping, say));
    }
  } finally {
    await member.close();
    say("closed");
  }
}

/** One batch of each owned partition, committed after it; false when there was nothing new. */
async function processABatchEach(
  member: GroupMember,
  topic: string,
  readers: Map<number, PartitionReader>,
  stopping: () => boolean,
  say: (text: string) => void,
): Promise<boolean> {
  let worked = false;
  for (const [partition, reader] of [...readers].sort(([a], [b]) => a - b)) {
    if (stopping()) break;
    const first = reader.line;
    const lines = reader.read(Number(args.batch));
    if (lines.length === 0) continue;
    worked = true;
    for (const [i, line] of lines.entries()) {
      await new Promise((r) => setTimeout(r, Number(args.delay) * 1000)); // the "work"
      if (args.output) appendFileSync(args.output, `${JSON.stringify({ worker: args.name, partition, offset: first + i, line })}\n`);
    }
    try {
      await member.commit([{ topic, partition, offset: reader.line }]);
    } catch (error) {
      if (!(error instanceof CommitFailed)) throw error;
      say(`commit of ${partition} fenced (${error.message}); dropping it`); // the next poll() rejoins
      readers.delete(partition);
      break;
    }
    if (!args.quiet) say(`partition ${partition}: processed ${first}..${reader.line - 1}`);
  }
  return worked;
}

main().catch((error: unknown) => {
  console.error(error instanceof GroupcoordError ? `${error.name}: ${error.message}` : error);
  process.exit(1);
});
