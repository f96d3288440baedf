// Kafka's ConsumerProtocol binary encoding (classic groups of protocolType "consumer"), so that
// Java, librdkafka and Python members can share a group with this one: Subscription v0-v3
// (topics, userData, ownedPartitions, generationId, rackId) and Assignment v0-v3
// (assignedPartitions, userData), non-flexible: big-endian ints, int16-length strings,
// int32-length arrays and bytes (-1 = null). Later versions are read as v3, as Kafka does.

export class ConsumerProtocolError extends Error {
  override name = "ConsumerProtocolError";
}

/** topic -> partitions. */
export type PartitionsByTopic = Map<string, number[]>;

export interface Subscription {
  topics: string[];
  userData: Uint8Array | null;
  ownedPartitions: PartitionsByTopic;
  generationId: number;
  rackId: string | null;
  version: number;
  /** Not on the wire: the member's groupInstanceId from the join response, which the leader
   * adds so that range and roundrobin order static members by it (as Kafka's Subscription). */
  groupInstanceId?: string | null;
}

export interface Assignment {
  partitions: PartitionsByTopic;
  userData: Uint8Array | null;
  version: number;
}

export function subscription(fields: Partial<Subscription> & { topics: string[] }): Subscription {
  return { userData: null, ownedPartitions: new Map(), generationId: -1, rackId: null, version: 0, ...fields };
}

export class Reader {
  private pos = 0;
  constructor(private readonly data: Uint8Array) {}

  private take(size: number): Buffer {
    if (size < 0 || this.pos + size > this.data.length) throw new ConsumerProtocolError("truncated ConsumerProtocol data");
    const chunk = Buffer.from(this.data.buffer, this.data.byteOffset + this.pos, size);
    this.pos += size;
    return chunk;
  }

  int16(): number {
    return this.take(2).readInt16BE(0);
  }

  int32(): number {
    return this.take(4).readInt32BE(0);
  }

  string(): string {
    const size = this.int16();
    if (size < 0) throw new ConsumerProtocolError("null string where a string is required");
    return this.take(size).toString("utf8");
  }

  nullableString(): string | null {
    const size = this.int16();
    return size < 0 ? null : this.take(size).toString("utf8");
  }

  nullableBytes(): Uint8Array | null {
    const size = this.int32();
    return size < 0 ? null : new Uint8Array(this.take(size));
  }

  arrayLength(): number {
    const size = this.int32();
    if (size < 0) return 0;
    if (size > this.data.length) throw new ConsumerProtocolError("array longer than the data"); // each element takes a byte at least
    return size;
  }

  topicPartitions(): PartitionsByTopic {
    const result: PartitionsByTopic = new Map();
    for (let i = this.arrayLength(); i > 0; i--) {
      const topic = this.string();
      const partitions = result.get(topic) ?? [];
      for (let j = this.arrayLength(); j > 0; j--) partitions.push(this.int32());
      result.set(topic, partitions);
    }
    return result;
  }

  get atEnd(): boolean {
    return this.pos >= this.data.length;
  }
}

export class Writer {
  private readonly chunks: Buffer[] = [];

  int16(value: number): this {
    const chunk = Buffer.alloc(2);
    chunk.writeInt16BE(value, 0);
    this.chunks.push(chunk);
    return this;
  }

  int32(value: number): this {
    const chunk = Buffer.alloc(4);
    chunk.writeInt32BE(value, 0);
    this.chunks.push(chunk);
    return this;
  }

  string(value: string): this {
    const raw = Buffer.from(value, "utf8");
    this.int16(raw.length);
    this.chunks.push(raw);
    return this;
  }

  nullableBytes(value: Uint8Array | null): this {
    if (value === null) return this.int32(-1);
    this.int32(value.length);
    this.chunks.push(Buffer.from(value));
    return this;
  }

  /** Topics in name order, as Kafka's and the Python client's encoders write them. */
  topicPartitions(value: PartitionsByTopic): this {
    this.int32(value.size);
    for (const topic of [...value.keys()].sort()) {
      const partitions = value.get(topic) ?? [];
      this.string(topic).int32(partitions.length);
      for (const p of partitions) this.int32(p);
    }
    return this;
  }

  bytes(): Uint8Array {
    return new Uint8Array(Buffer.concat(this.chunks));
  }
}

export function decodeSubscription(data: Uint8Array): Subscription {
  const reader = new Reader(data);
  const version = reader.int16();
  if (version < 0) throw new ConsumerProtocolError(`negative Subscription version ${version}`);
  const topics: string[] = [];
  for (let i = reader.arrayLength(); i > 0; i--) topics.push(reader.string());
  const userData = reader.nullableBytes();
  let ownedPartitions: PartitionsByTopic = new Map();
  let generationId = -1;
  let rackId: string | null = null;
  if (version >= 1 && !reader.atEnd) ownedPartitions = reader.topicPartitions();
  if (version >= 2 && !reader.atEnd) generationId = reader.int32();
  if (version >= 3 && !reader.atEnd) rackId = reader.nullableString();
  return { topics, userData, ownedPartitions, generationId, rackId, version };
}

export function encodeSubscription(sub: Subscription): Uint8Array {
  const writer = new Writer().int16(sub.version).int32(sub.topics.length);
  for (const topic of sub.topics) writer.string(topic);
  writer.nullableBytes(sub.userData);
  if (sub.version >= 1) writer.topicPartitions(sub.ownedPartitions);
  if (sub.version >= 2) writer.int32(sub.generationId);
  if (sub.version >= 3) {
    if (sub.rackId === null) writer.int16(-1);
    else writer.string(sub.rackId);
  }
  return writer.bytes();
}

export function decodeAssignment(data: Uint8Array): Assignment {
  if (data.length === 0) return { partitions: new Map(), userData: null, version: 0 };
  const reader = new Reader(data);
  const version = reader.int16();
  if (version < 0) throw new ConsumerProtocolError(`negative Assignment version ${version}`);
  const partitions = reader.topicPartitions();
  const userData = reader.nullableBytes();
  return { partitions, userData, version };
}

export function encodeAssignment(assignment: Assignment): Uint8Array {
  return new Writer()
    .int16(assignment.version)
    .topicPartitions(assignment.partitions)
    .nullableBytes(assignment.userData)
    .bytes();
}
