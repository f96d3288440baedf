// GroupMember: what a consumer author uses. Join a group, keep the membership alive in the
// background, learn which partitions you own through a rebalance listener, commit safely. As
// the Python client (groupcoord.client.GroupMember), for both protocols.
//
// Concurrency: poll() and close() are the caller's (one at a time); commit(), commitAsync(),
// committed() and assignment() may be called at any time. Heartbeats run on timers of the
// event loop and share a lock with poll(), so none is sent while poll() rebalances or runs a
// listener callback. They need the event loop: a callback or a loop that blocks it for longer
// than the session timeout loses the membership.

import { ClassicMembership, RejoinNeeded } from "./classic.js";
import { type CommitOptions, type CommittedOffset, type PartitionOffset, commitCodes, fetchBody, fetchCodes, prepareCommit, readCommitted } from "./commit.js";
import { ConsumerMembership, RejoinRequired } from "./consumer.js";
import {
  CommitFailed,
  CoordinatorUnavailable,
  ErrorCode,
  FENCING_ERRORS,
  FencedInstance,
  GroupcoordError,
  REDISCOVER_ERRORS,
  RETRIABLE_ERRORS,
  WriteConditionFailed,
  errorName,
  errorOf,
} from "./errors.js";
import { type GroupMemberOptions, type MemberSettings, type RebalanceListener, memberSettings } from "./options.js";
import { MemberPush } from "./push.js";
import { TopicCache } from "./topic-cache.js";
import { PartitionSet, type TopicPartition } from "./topic-partition.js";
import { Mutex, Signal, jitter, now, sleep } from "./timing.js";
import { type Reply, Transport, checkBaseUrl } from "./transport.js";
import type { Json } from "./validate.js";

const COMMIT_ATTEMPTS = 3;
const IDLE_CHECK_MS = 50; // how soon the heartbeat loop looks again when it has nothing to do

type ListenerKind = keyof RebalanceListener;

export class GroupMember {
  readonly groupId: string;
  readonly protocol: "consumer" | "classic";
  private readonly settings: MemberSettings;
  private readonly bootstrap: Transport;
  private coordinator: Transport | undefined;
  private lookup: Promise<Transport> | undefined;
  private readonly topicCache: TopicCache;
  private readonly classic: ClassicMembership | undefined;
  private readonly consumer: ConsumerMembership | undefined;
  private owned = new PartitionSet(); // rebound, never changed in place: read without the lock
  private readonly lock = new Mutex();
  private readonly wake = new Signal();
  private readonly stopBeating = new Signal();
  private readonly nudge = new Signal(); // wakes the heartbeat loop: a push notice, or close()
  private readonly push: MemberPush;
  private rejoin = false;
  // Classic: a round failed and the next is due (Kafka's PREPARING_REBALANCE). No heartbeats
  // meanwhile: they carry a generation the group has left, and its ILLEGAL_GENERATION would
  // give the partitions up as lost.
  private rejoining = false;
  private joined = false;
  private lost = false;
  private closeRequested = false;
  private closed = false;
  private polling = false;
  private inListener = false;
  private fatal: unknown;
  private listenerError: unknown;
  private lastOk = now();
  private pendingTarget: PartitionSet | undefined;
  private commitQueue: Promise<unknown> = Promise.resolve();
  private heartbeats: Promise<void> | undefined;
  private closing: Promise<void> | undefined;

  /** A member of group `groupId` at the coordinator found through `bootstrapUrl`. Nothing is
   * sent before the first poll(). Throws TypeError / RangeError for a bad argument. */
  constructor(bootstrapUrl: string, groupId: string, options: GroupMemberOptions) {
    checkBaseUrl(bootstrapUrl, "bootstrapUrl");
    if (options === undefined) throw new TypeError("options must say what to subscribe to: { topics: [...] } or { pattern }");
    const settings = memberSettings(groupId, options);
    this.settings = settings;
    this.groupId = settings.groupId;
    this.protocol = settings.protocol;
    this.bootstrap = new Transport(bootstrapUrl, {
      clientId: settings.clientId,
      timeoutMs: settings.requestTimeoutMs,
      ...(settings.sign === undefined ? {} : { sign: settings.sign }),
      ...(settings.region === undefined ? {} : { region: settings.region }),
      ...(settings.headers === undefined ? {} : { headers: settings.headers }),
    });
    // The push channel (src/push.ts): a socket once the member has an id.
    this.push = new MemberPush(settings.groupId, () => (this.joined ? this.memberId : ""), {
      enabled: settings.push,
      intervalMs: settings.pushHeartbeatIntervalMs,
      headersFor: (url) => this.bootstrap.handshakeHeaders(url),
      logger: settings.logger,
      onNotice: () => this.nudge.set(),
    });
    const call = (api: string, body: Json): Promise<Json> => this.call(api, body).then((r) => r.body);
    this.topicCache = new TopicCache(call, settings.metadataRefreshMs);
    const transport = (): Promise<Transport> => this.transport();
    if (settings.protocol === "classic") {
      this.classic = new ClassicMembership({
        ...settings,
        transport,
        topics: () => this.subscribedTopics(true),
        partitionCounts: (topics) => this.topicCache.partitionCounts(topics),
      });
    } else {
      this.consumer = new ConsumerMembership({
        ...settings,
        transport,
        topicName: (id) => this.topicCache.nameOf(id),
        topicId: (name) => this.topicCache.idOf(name),
      });
    }
  }

  /** The id the coordinator knows this member by ("" before a classic join). */
  get memberId(): string {
    return (this.classic ?? this.consumer)?.memberId ?? "";
  }

  /** Runs the group work that is due (join, rebalance, the listener) and resolves to what
   * this member owns. When nothing is due it waits up to `timeoutMs` for something to happen.
   * While the coordinator is unreachable it keeps trying for up to `timeoutMs` (at least once)
   * and resolves to what the member still owns.
   *
   * Rejects with FencedInstance (another process took the static member's instance id),
   * GroupcoordError for a fatal answer (bad session timeout, group full, ...), or what a
   * listener callback threw (after the rebalance step completed). */
  async poll(timeoutMs = 0): Promise<TopicPartition[]> {
    if (typeof timeoutMs !== "number" || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs)) {
      throw new RangeError(`timeoutMs must be a finite number >= 0, got ${String(timeoutMs)}`);
    }
    this.checkUsable();
    if (this.polling) throw new Error("poll() is already running (or a listener callback called it): await it first");
    this.polling = true;
    try {
      this.heartbeats ??= this.heartbeatLoop().catch((error: unknown) => {
        this.fatal ??= error; // a bug: poll() reports it rather than the process crashing
      });
      const deadline = now() + timeoutMs;
      if (!this.workDue()) {
        await this.wake.wait(timeoutMs);
        this.wake.clear();
        this.checkUsable();
      }
      await this.lock.run(() => (this.classic ? this.pollClassic(deadline) : this.pollConsumer(deadline)));
      const owned = this.owned.toArray();
      this.raiseListenerError();
      return owned;
    } finally {
      this.polling = false;
    }
  }

  /** Whether the member's push socket is open now (docs/client-typescript.md, "Push"). */
  get pushConnected(): boolean {
    return this.push.connected;
  }

  /** What this member owns now (as of the last poll()). */
  assignment(): TopicPartition[] {
    return this.owned.toArray();
  }

  /** Commits `offsets` (the next offset to read per partition) with this member's generation
   * (classic) or epoch (consumer). Coordinator moves and "busy" answers are retried (a commit
   * is idempotent). Rejects with CommitFailed when the coordinator fenced the commit (the
   * partitions moved on: do not retry; poll() rejoins), WriteConditionFailed when one of the
   * `writes` failed its condition (nothing was written), GroupcoordError for other refusals. */
  async commit(offsets: readonly PartitionOffset[], options: CommitOptions = {}): Promise<void> {
    const prepared = prepareCommit(offsets, options);
    if (prepared.empty) return;
    const membership = (this.classic ?? this.consumer) as ClassicMembership | ConsumerMembership;
    for (let attempt = 1; ; attempt++) {
      const body = { groupId: this.groupId, ...membership.commitFields(), topics: prepared.topics, ...prepared.extension };
      const reply = await this.call("offset-commit", body);
      const codes = commitCodes(reply.body);
      if (codes.length === 0) return;
      const failedWrite = reply.body.failedWrite;
      if (failedWrite) {
        throw new WriteConditionFailed(`commit refused: writes[${failedWrite.index}]: ${failedWrite.reason}`, failedWrite.index, failedWrite.reason);
      }
      const fenced = codes.filter((c) => FENCING_ERRORS.has(c));
      if (fenced.length > 0) {
        if (this.classic) {
          this.rejoin = true; // the next poll() finds out where it stands
          this.wake.set();
        }
        throw new CommitFailed(`commit fenced: ${errorName(fenced[0] as number)}`, { error: fenced[0] as number });
      }
      const retriable = codes.every((c) => RETRIABLE_ERRORS.has(c));
      if (retriable && attempt < COMMIT_ATTEMPTS) {
        if (codes.some((c) => REDISCOVER_ERRORS.has(c))) this.coordinator = undefined;
        await sleep(50 * 2 ** attempt * jitter(0.5, 1));
        continue;
      }
      const names = codes.map(errorName).join(", ");
      const ErrorClass = retriable ? CoordinatorUnavailable : GroupcoordError;
      throw new ErrorClass(`commit failed: ${names}`, { error: codes[0] as number });
    }
  }

  /** commit() queued behind the commitAsync() calls before it, so they land in call order;
   * close() waits for them. The arguments are checked at once. */
  commitAsync(offsets: readonly PartitionOffset[], options: CommitOptions = {}): Promise<void> {
    try {
      prepareCommit(offsets, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const run = this.commitQueue.then(() => this.commit(offsets, options));
    this.commitQueue = run.catch(() => undefined); // its caller hears of a failure, not the queue
    return run;
  }

  /** The committed offsets of `partitions` (offset null where nothing is committed), sorted. */
  async committed(partitions: readonly TopicPartition[]): Promise<CommittedOffset[]> {
    const body = fetchBody(this.groupId, partitions);
    if (body === undefined) return [];
    for (let attempt = 1; ; attempt++) {
      const reply = await this.call("offset-fetch", body);
      const group: Json = reply.body.groups?.[0] ?? {};
      const codes = fetchCodes(group);
      const retriable = codes.length > 0 && codes.every((c) => RETRIABLE_ERRORS.has(c));
      if (retriable && attempt < COMMIT_ATTEMPTS) {
        if (codes.some((c) => REDISCOVER_ERRORS.has(c))) this.coordinator = undefined;
        await sleep(50 * 2 ** attempt);
        continue;
      }
      if (codes.length > 0) {
        const ErrorClass = retriable ? CoordinatorUnavailable : GroupcoordError;
        throw new ErrorClass(`offset-fetch failed: ${codes.map(errorName).join(", ")}`, { error: codes[0] as number });
      }
      return readCommitted(group);
    }
  }

  /** Waits for pending commitAsync() calls, gives the partitions up (listener: revoked, or lost
   * if the membership was already lost) and leaves the group: the partitions move at once. A
   * static member leaves temporarily: the coordinator keeps its partitions for its return
   * until its session times out, without a rebalance. Idempotent. */
  close(): Promise<void> {
    // The callback runs under the lock close() needs: awaiting close() there would never end.
    if (this.inListener) return Promise.reject(new Error("close() inside a rebalance listener callback: call it after poll() resolves"));
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closeRequested = true;
    this.wake.set();
    await this.commitQueue;
    this.stopBeating.set();
    this.nudge.set();
    await this.lock.run(async () => {
      this.closed = true;
      if (this.owned.size > 0) await this.callListener(this.lost ? "onPartitionsLost" : "onPartitionsRevoked", this.owned);
      try {
        await this.leave();
      } catch (error) {
        if (!(error instanceof GroupcoordError)) throw error; // unreachable: the session timeout frees them anyway
      }
      this.owned = new PartitionSet();
      this.joined = false;
      this.wake.set();
    });
    await this.push.close(); // after the leave: its `$disconnect` then finds no member to expire
    await this.heartbeats;
    this.raiseListenerError();
  }

  // --- the classic protocol ---

  private async pollClassic(deadline: number): Promise<void> {
    const classic = this.classic as ClassicMembership;
    if (this.settings.matcher && this.joined && !this.rejoin) {
      // Wildcards: re-read metadata and rejoin when the matching set changes.
      try {
        const topics = await this.subscribedTopics(false);
        if (topics.join("\n") !== classic.subscribed.join("\n")) this.rejoin = true;
      } catch (error) {
        this.unavailableOrThrow(error);
      }
    }
    for (let attempt = 1; ; attempt++) {
      if (this.lost) await this.giveUpLost();
      if (this.joined && !this.rejoin) return;
      this.rejoin = false;
      let result;
      try {
        this.rejoining = true;
        result = await classic.rejoin((partitions) => this.revokeBeforeJoin(partitions));
      } catch (error) {
        this.rejoin = true;
        // A rebalance that started meanwhile is joined at once; anything else backs off (and
        // heartbeats again: the coordinator may have moved, the generation is still ours).
        if (error instanceof RejoinNeeded) this.lost ||= error.lost;
        else {
          this.rejoining = false;
          this.unavailableOrThrow(error);
        }
        const pause = !(error instanceof RejoinNeeded && error.error === ErrorCode.REBALANCE_IN_PROGRESS);
        if (!(await this.retryUntil(deadline, attempt, pause))) return;
        continue;
      }
      this.rejoining = false;
      this.joined = true;
      this.push.memberChanged(); // its socket opens now, not at the channel's next look
      this.lastOk = now();
      if (result.revoked.size > 0) await this.callListener("onPartitionsRevoked", result.revoked);
      this.owned = classic.owned.copy();
      if (result.assigned.size > 0) await this.callListener("onPartitionsAssigned", result.assigned);
      if (result.rejoin) this.rejoin = true; // the revoked partitions go out next round (or it refused)
    }
  }

  /** Before the join: eager rebalancing revokes everything, cooperative the partitions of
   * topics no longer subscribed. */
  private async revokeBeforeJoin(partitions: PartitionSet): Promise<void> {
    await this.callListener("onPartitionsRevoked", partitions);
    this.owned = this.owned.minus(partitions);
  }

  // --- the consumer protocol ---

  private async pollConsumer(deadline: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (this.lost) await this.giveUpLost();
        if (!this.joined) {
          await this.consumerHeartbeat(); // the join: epoch 0
          this.joined = true;
          this.push.memberChanged(); // its socket opens now, not at the channel's next look
        }
        if (this.pendingTarget !== undefined) await this.reconcileConsumer();
        return;
      } catch (error) {
        // Rejoin at once after a fence; back off if that keeps failing.
        if (!(error instanceof RejoinRequired)) this.unavailableOrThrow(error);
        const pause = !(error instanceof RejoinRequired) || attempt > 1;
        if (!(await this.retryUntil(deadline, attempt, pause))) return;
      }
    }
  }

  /** Moves to the assignment the coordinator sent: revoke what is gone, take what is new, and
   * acknowledge at once (the next owner of a revoked partition is waiting for it). */
  private async reconcileConsumer(): Promise<void> {
    const target = this.pendingTarget;
    this.pendingTarget = undefined;
    if (target === undefined) return;
    const revoked = this.owned.minus(target);
    if (revoked.size > 0) {
      await this.callListener("onPartitionsRevoked", revoked);
      this.owned = this.owned.minus(revoked);
    }
    const added = target.minus(this.owned);
    this.owned = target.copy();
    if (added.size > 0) await this.callListener("onPartitionsAssigned", added);
    await this.consumerHeartbeat();
  }

  private async consumerHeartbeat(timeoutMs?: number): Promise<void> {
    let target: PartitionSet | undefined;
    try {
      target = await (this.consumer as ConsumerMembership).heartbeat(this.owned, timeoutMs);
    } catch (error) {
      if (error instanceof RejoinRequired) {
        this.lost = true;
        this.wake.set();
      }
      throw error;
    }
    this.lastOk = now();
    if (target !== undefined) {
      // The newest answer wins: an assignment back to what the member owns cancels a pending one.
      this.pendingTarget = target.equals(this.owned) ? undefined : target;
      if (this.pendingTarget !== undefined) this.wake.set();
    }
  }

  // --- shared machinery ---

  private async leave(): Promise<void> {
    await (this.classic ?? this.consumer)?.leave();
  }

  /** The membership is gone: the listener hears `lost`, and the member rejoins afresh. */
  private async giveUpLost(): Promise<void> {
    this.lost = false;
    this.pendingTarget = undefined;
    const owned = this.owned;
    this.owned = new PartitionSet();
    if (this.classic) {
      this.classic.owned = new PartitionSet();
      this.classic.reset();
    }
    this.consumer?.reset();
    this.joined = false;
    if (owned.size > 0) await this.callListener("onPartitionsLost", owned);
  }

  /** Runs a callback; what it throws is re-thrown from poll()/close() once the step completed
   * (as Kafka's consumer does), so that the membership stays consistent. */
  private async callListener(kind: ListenerKind, partitions: PartitionSet): Promise<void> {
    const listener = this.settings.listener;
    const callback = listener[kind];
    if (callback === undefined) return;
    this.inListener = true;
    try {
      await callback.call(listener, partitions.toArray());
    } catch (error) {
      this.listenerError ??= error;
    } finally {
      this.inListener = false;
    }
  }

  private raiseListenerError(): void {
    const error = this.listenerError;
    this.listenerError = undefined;
    if (error !== undefined) throw error;
  }

  private async heartbeatLoop(): Promise<void> {
    let nextBeat = now();
    for (;;) {
      await this.nudge.wait(Math.max(0, Math.min(nextBeat, this.push.nextBeat()) - now()), false);
      this.nudge.clear();
      if (this.stopBeating.isSet) return;
      nextBeat = Math.min(nextBeat, this.push.dueBeat(now()));
      if (now() < nextBeat) continue;
      if (!this.joined || this.lost || this.rejoining || this.fatal !== undefined) {
        nextBeat = now() + IDLE_CHECK_MS; // poll() has the next move
        continue;
      }
      const started = now();
      const beat = await this.lock.tryRun(() => this.beatUnderLock());
      if (beat === undefined) {
        nextBeat = now() + IDLE_CHECK_MS; // poll() is rebalancing or running the listener
        continue;
      }
      nextBeat = started + this.intervalMs();
      if (this.joined && !this.lost && started - this.lastOk > this.settings.sessionTimeoutMs) {
        // No successful heartbeat within the session timeout: the coordinator has surely
        // expired this member. Give the partitions up (lost), rediscover and rejoin.
        this.coordinator = undefined;
        this.lost = true;
        this.wake.set();
      }
    }
  }

  private async beatUnderLock(): Promise<boolean> {
    if (this.stopBeating.isSet || !this.joined || this.lost || this.rejoining) return true;
    try {
      await this.beatOnce();
    } catch (error) {
      if (error instanceof CoordinatorUnavailable) this.unavailable(error);
      else {
        this.fatal = error; // FencedInstance, a refused subscription, ...
        this.wake.set();
      }
    }
    return true;
  }

  private async beatOnce(): Promise<void> {
    // One attempt per beat (the next beat is the retry), answered within the session.
    const timeoutMs = Math.max(1000, Math.min(this.settings.requestTimeoutMs, this.settings.sessionTimeoutMs));
    if (this.consumer) {
      try {
        await this.consumerHeartbeat(timeoutMs);
      } catch (error) {
        if (!(error instanceof RejoinRequired)) throw error; // poll() gives the partitions up and rejoins
      }
      return;
    }
    const error = await (this.classic as ClassicMembership).heartbeat(timeoutMs);
    if (error === ErrorCode.NONE || error === ErrorCode.REBALANCE_IN_PROGRESS) {
      this.lastOk = now();
      if (error === ErrorCode.REBALANCE_IN_PROGRESS) {
        this.rejoin = true;
        this.wake.set();
      }
    } else if (error === ErrorCode.UNKNOWN_MEMBER_ID || error === ErrorCode.ILLEGAL_GENERATION) {
      // Expired, or a generation went by without this member: as Kafka's consumer, reset the
      // generation, give the partitions up as lost and rejoin.
      this.lost = true;
      this.wake.set();
    } else if (error === ErrorCode.FENCED_INSTANCE_ID) {
      throw new FencedInstance("another member took this groupInstanceId", { error });
    } else if (RETRIABLE_ERRORS.has(error)) {
      throw new CoordinatorUnavailable(`heartbeat: ${errorName(error)}`, { error });
    } else if (error === ErrorCode.GROUP_AUTHORIZATION_FAILED || error === ErrorCode.INVALID_GROUP_ID) {
      throw new GroupcoordError(`heartbeat: ${errorName(error)}`, { error });
    }
  }

  private intervalMs(): number {
    const interval = Math.max(10, ((this.classic ?? this.consumer) as ClassicMembership | ConsumerMembership).heartbeatIntervalMs);
    return this.consumer ? this.push.intervalMs(interval) : interval; // a third as often while push is on
  }

  private workDue(): boolean {
    if (!this.joined || this.lost || this.rejoin || this.pendingTarget !== undefined) return true;
    return this.classic !== undefined && this.settings.matcher !== undefined && this.topicCache.stale;
  }

  /** Backs off before another attempt; false when poll()'s time is up (or close() began). */
  private async retryUntil(deadline: number, attempt: number, pause = true): Promise<boolean> {
    if (this.fatal !== undefined) throw this.fatal;
    if (this.closeRequested || now() >= deadline) return false;
    if (pause) {
      const delay = Math.min(1000, 50 * 2 ** attempt) * jitter(0.5, 1);
      await sleep(Math.max(0, Math.min(delay, deadline - now())));
    }
    return true;
  }

  private unavailableOrThrow(error: unknown): void {
    if (!(error instanceof CoordinatorUnavailable)) throw error;
    this.unavailable(error);
  }

  private unavailable(error: CoordinatorUnavailable): void {
    if (error.error !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) this.coordinator = undefined; // rediscover
  }

  private checkUsable(): void {
    if (this.fatal !== undefined) throw this.fatal;
    if (this.closed || this.closeRequested) throw new Error("this GroupMember is closed");
  }

  /** The coordinator's transport, found with find-coordinator (and again after
   * NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a request that got no answer). */
  private transport(): Promise<Transport> {
    if (this.coordinator !== undefined) return Promise.resolve(this.coordinator);
    this.lookup ??= this.findCoordinator().finally(() => (this.lookup = undefined));
    return this.lookup;
  }

  private async findCoordinator(): Promise<Transport> {
    const reply = await this.bootstrap.call("find-coordinator", { keyType: 0, coordinatorKeys: [this.groupId] }, { retries: 2 });
    const entry: Json = reply.body.coordinators?.[0] ?? {};
    const error = errorOf(entry);
    if (error !== ErrorCode.NONE || !entry.endpoint) {
      throw new CoordinatorUnavailable(`find-coordinator: ${errorName(error)}: ${entry.errorMessage ?? ""}`, {
        error: error !== ErrorCode.NONE ? error : ErrorCode.COORDINATOR_NOT_AVAILABLE,
      });
    }
    try {
      this.coordinator = this.bootstrap.withBaseUrl(entry.endpoint);
    } catch (bad) {
      throw new CoordinatorUnavailable(`find-coordinator: ${(bad as Error).message}`, { cause: bad });
    }
    this.push.offer(entry.pushUrl);
    return this.coordinator;
  }

  private async call(api: string, body: Json): Promise<Reply> {
    try {
      return await (await this.transport()).call(api, body);
    } catch (error) {
      if (!(error instanceof CoordinatorUnavailable)) throw error;
      this.coordinator = undefined; // once more, at the coordinator found again
      return (await this.transport()).call(api, body);
    }
  }

  private async subscribedTopics(refresh: boolean): Promise<string[]> {
    if (this.settings.topics !== undefined) return [...this.settings.topics];
    return this.topicCache.matching(this.settings.matcher as RegExp, refresh);
  }
}
