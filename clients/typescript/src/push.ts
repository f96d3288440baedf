// The push channel (docs/client-typescript.md, "Push"), as the Python client's: a WebSocket to
// the URL find-coordinator tells (`pushUrl`), opened for the member's group and id, on which
// the coordinator posts a notice whenever the member should heartbeat. A hint beside the
// protocol: the member heartbeats at its interval whatever happens here, and a socket that
// drops, or never opens, costs latency only.
//
// PushChannel is the socket (the `ws` package, imported only when a socket is opened: without
// it the member polls, and says so once): it connects once the member has an id (at once when
// woken: a join answered), follows a new id (a rejoin), keeps the socket alive, and reconnects
// with jittered back-off. MemberPush is the member's side of it: the socket the offer asks for (one at
// most), the beats a notice asks for, the steady interval while the socket is open, and one
// log line when the member polls.

import type WebSocket from "ws";
import { Signal, now } from "./timing.js";

// API Gateway closes a connection idle for 10 minutes (a WebSocket ping frame does not count: it
// needs a message): a keepalive about every 9 keeps it open (and finds a dead one). API Gateway
// answers it itself, one-way: one message in, no function call, nothing back. Each pause is
// drawn within PING_JITTER of the interval (at most 9 min 22 s: over half a minute before the
// idle limit), so that members connected together do not send together.
export const PING_INTERVAL_MS = 540_000;
export const PING_JITTER = 0.04;
// Reconnects back off exponentially with full jitter, from the first pause up to the cap.
export const BACKOFF_FIRST_MS = 200;
export const BACKOFF_CAP_MS = 30_000;
// After a notice's beat, a second one this much later: the first may read the group (an
// eventually consistent read) before the change reached it, and the next at the interval is
// 15 s away.
export const SECOND_LOOK_MS = 1000;
const OPEN_TIMEOUT_MS = 5000;
// How often an idle channel looks whether its member has an id, and an open socket whether
// its member id changed; a join answered wakes it at once (wake()).
const MEMBER_CHECK_MS = 250;
const MAX_MESSAGE_BYTES = 64 * 1024;
const MAX_AFTER_MS = 60_000;
// The push channel's messages (the WebSocket API's routes). A ping makes the socket its
// member's current one again (one function call, answered pong); a keepalive only keeps the
// socket open.
const PING = JSON.stringify({ action: "ping" });
const KEEPALIVE = JSON.stringify({ action: "keepalive" });

/** Where the client's push lines go (default: the console). */
export interface PushLogger {
  info(message: string): void;
  warn(message: string): void;
}

/** The pause before the next connect. After a socket that ended in order (the member's id
 * changed): the first pause. After `failures` failed attempts in a row (a socket that dropped
 * counts one): full jitter, `jitter` (0 to 1, a random draw) of an exponential ceiling, the
 * first pause doubled per failure up to the cap, so that members a restarted coordinator
 * dropped together do not reconnect together. */
export function reconnectPauseMs(failures: number, jitter: number): number {
  if (failures <= 0) return BACKOFF_FIRST_MS;
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_FIRST_MS * 2 ** Math.min(failures, 16));
  return Math.min(1, Math.max(0, jitter)) * ceiling;
}

/** The pause before the next ping: `intervalMs` moved by up to PING_JITTER of it either way,
 * `jitter` (0 to 1, a random draw) placing it. */
export function pingPauseMs(intervalMs: number, jitter: number): number {
  return intervalMs * (1 + PING_JITTER * (2 * Math.min(1, Math.max(0, jitter)) - 1));
}

/** The steady heartbeat interval: while the socket is open push carries every change, so a
 * beat is a liveness backup, `pushMs` apart (never more than 3 of the coordinator's
 * intervals, which fit its session, nor less than one); else the coordinator's. */
export function steadyIntervalMs(coordinatorMs: number, pushMs: number, connected: boolean): number {
  return connected ? Math.max(coordinatorMs, Math.min(pushMs, 3 * coordinatorMs)) : coordinatorMs;
}

/** A query's value encoded as SigV4 encodes it (RFC 3986: a space is %20, and !'()* too), so
 * that a signed handshake's canonical request is the one API Gateway computes. */
export function sigv4Encode(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The delay (ms) a notice asks for: 0, or its `afterMs` (a disconnect grace); undefined for a
 * message that is no notice (a pong). */
export function noticeDelayMs(message: string): number | undefined {
  let notice: unknown;
  try {
    notice = JSON.parse(message);
  } catch {
    return undefined;
  }
  if (typeof notice !== "object" || notice === null || (notice as { type?: unknown }).type !== "heartbeat") return undefined;
  const after = (notice as { afterMs?: unknown }).afterMs;
  return Number.isInteger(after) && (after as number) > 0 && (after as number) < MAX_AFTER_MS ? (after as number) : 0;
}

/** Whether a handshake that failed (`status`: the HTTP status it was answered with, if any) may
 * have its `$connect` recorded still, after a later socket's: unless the API answered it with a
 * refusal (4xx: refused, or throttled before any function ran), it may (a timeout, a connection
 * lost mid-way, or a 5xx: API Gateway answers 500 when the function outlives its 29 s
 * integration timeout, and the function may write still). */
export function handshakeMayLinger(status: number | undefined): boolean {
  return !(status !== undefined && status >= 400 && status < 500);
}

interface Session {
  opened: boolean;
  error: Error | undefined; // undefined: ended in order (by this side)
}

/** The socket of one member: connects when `memberId()` is not "" (looking every `lookMs`,
 * or at once when woken), follows a new id, keeps the socket alive (and pings after an
 * uncertain handshake), reconnects with jittered back-off, and
 * calls `onNotice(delayMs)` for each notice (and with 0 once a socket opened or dropped: a
 * notice may have gone meanwhile). */
export class PushChannel {
  private readonly stopped = new Signal();
  // wake(): the member's id changed; without it the channel would see that only at its next
  // look, and every notice posted meanwhile (a joiner's) is lost.
  private readonly woken = new Signal();
  private checkMember: (() => void) | undefined; // the open socket's look at its member id
  private socket: WebSocket | undefined;
  private open = false;
  private fellBack = false;
  // A handshake attempt may have its `$connect` recorded after the next socket's (it failed
  // without a refusal): the next socket pings at its open and first interval.
  private pingOwed = false;
  private running: Promise<void> | undefined;

  constructor(
    readonly url: string,
    private readonly groupId: string,
    private readonly memberId: () => string,
    private readonly onNotice: (delayMs: number) => void,
    private readonly headersFor: (url: string) => Promise<Record<string, string>>,
    private readonly logger: PushLogger,
    private readonly pingIntervalMs = PING_INTERVAL_MS,
    private readonly lookMs = MEMBER_CHECK_MS,
  ) {}

  get connected(): boolean {
    return this.open;
  }

  start(): this {
    this.running ??= this.run();
    return this;
  }

  /** The member's id changed (a join answered): connect now under the new id (an open socket
   * under another id closes at once), not at the next look. */
  wake(): void {
    this.woken.set();
    this.checkMember?.();
  }

  /** Closes the socket: in order (the coordinator's `$disconnect` sees a clean close), or,
   * `abort`, dropped without a close frame, as a killed process's is. */
  async stop(abort = false): Promise<void> {
    this.stopped.set();
    this.woken.set();
    const socket = this.socket;
    if (socket !== undefined) {
      if (abort) socket.terminate();
      else socket.close(1000);
    }
    await this.running;
  }

  private async run(): Promise<void> {
    let Socket: typeof WebSocket;
    try {
      Socket = (await import("ws")).default;
    } catch {
      this.logger.warn("push: the ws package is not installed; polling at the heartbeat interval");
      return;
    }
    let failures = 0;
    while (!this.stopped.isSet) {
      const memberId = this.memberId();
      if (!memberId) {
        await this.woken.wait(this.lookMs, false);
        this.woken.clear();
        continue;
      }
      const ended = await this.session(Socket, memberId);
      if (this.stopped.isSet) return;
      if (ended.error === undefined) failures = 0;
      else {
        failures = ended.opened ? 1 : failures + 1;
        this.fallBack(ended.error);
      }
      // A socket that closed under the member: a beat now, while it reconnects (a notice may
      // have been lost, and its session may be in a disconnect grace).
      if (ended.opened) this.onNotice(0);
      // After a socket that ended in order (its member id changed) a wake ends the pause: the
      // member has its new id now. A failure's back-off holds.
      const pause = ended.error === undefined ? this.woken : this.stopped;
      await pause.wait(reconnectPauseMs(failures, Math.random()), false);
      this.woken.clear();
    }
  }

  private async session(Socket: typeof WebSocket, memberId: string): Promise<Session> {
    const url = `${this.url}?groupId=${sigv4Encode(this.groupId)}&memberId=${sigv4Encode(memberId)}`;
    let headers: Record<string, string>;
    try {
      headers = await this.headersFor(url);
    } catch (error) {
      return { opened: false, error: error instanceof Error ? error : new Error(String(error)) };
    }
    return new Promise((resolve) => {
      const socket = new Socket(url, {
        headers,
        handshakeTimeout: OPEN_TIMEOUT_MS,
        maxPayload: MAX_MESSAGE_BYTES,
      });
      this.socket = socket;
      let opened = false;
      let error: Error | undefined;
      let byUs = false;
      let refusedWith: number | undefined; // the HTTP status a refused handshake got
      const timers: NodeJS.Timeout[] = [];
      let pinging: NodeJS.Timeout | undefined;
      // The socket does not keep a finished program running (as the heartbeat timers).
      socket.on("upgrade", (response) => response.socket.unref());
      socket.on("unexpected-response", (_request, response) => {
        refusedWith = response.statusCode;
        error ??= new Error(`Unexpected server response: ${response.statusCode}`);
        socket.terminate();
      });
      socket.on("open", () => {
        opened = true;
        // After an uncertain handshake, a ping makes this socket its member's current one
        // whatever order the coordinator recorded the connects in; the stale `$connect` may
        // still be running, so one more at the first interval (nextMessage).
        if (this.pingOwed) socket.send(PING);
        this.open = true;
        if (this.fellBack) this.logger.info(`push: connected again to ${this.url}`);
        this.fellBack = false;
        this.onNotice(0);
        const send = (): void => {
          socket.send(this.nextMessage());
          pinging = setTimeout(send, pingPauseMs(this.pingIntervalMs, Math.random())).unref();
        };
        pinging = setTimeout(send, pingPauseMs(this.pingIntervalMs, Math.random())).unref();
        const checkMember = (): void => {
          if (this.memberId() !== memberId && !byUs) {
            byUs = true;
            socket.close(1000); // a rejoin under another id: a new socket for it
          }
        };
        this.checkMember = checkMember;
        timers.push(setInterval(checkMember, this.lookMs).unref());
        checkMember(); // woken during the handshake
      });
      socket.on("message", (data) => {
        const delay = noticeDelayMs(data.toString());
        if (delay !== undefined) this.onNotice(delay);
      });
      socket.on("error", (cause) => (error ??= cause));
      socket.on("close", (code) => {
        for (const timer of timers) clearInterval(timer);
        clearTimeout(pinging);
        this.checkMember = undefined;
        this.open = false;
        this.socket = undefined;
        const inOrder = byUs || this.stopped.isSet;
        if (!opened && !inOrder && handshakeMayLinger(refusedWith)) this.pingOwed = true;
        resolve({ opened, error: inOrder ? undefined : (error ?? new Error(`closed (${code})`)) });
      });
    });
  }

  /** The periodic message: the owed second ping (any stale `$connect` has finished by now:
   * 29 s at most), then keepalives. */
  private nextMessage(): string {
    if (!this.pingOwed) return KEEPALIVE;
    this.pingOwed = false;
    return PING;
  }

  /** Says once, until a socket opens again, that the member polls. */
  private fallBack(error: Error): void {
    if (this.fellBack || this.stopped.isSet) return;
    this.fellBack = true;
    this.logger.warn(`push: no socket to ${this.url} (${error.message}); polling at the heartbeat interval until it reconnects`);
  }
}

export interface MemberPushOptions {
  enabled: boolean;
  intervalMs: number; // the steady heartbeat while the socket is open
  lookMs?: number; // how often the idle channel looks for the member's id (default 250)
  headersFor: (url: string) => Promise<Record<string, string>>; // a handshake's (signed if IAM)
  logger: PushLogger;
  onNotice: () => void; // wakes the heartbeat loop
}

/** A member's side of the push channel: at most one socket, to the URL find-coordinator
 * offers, moved or closed when the offer changes and never opened again once closed; the
 * beats notices ask for; the steady interval while the socket is open; one log line when the
 * member polls instead. */
export class MemberPush {
  private channel: PushChannel | undefined;
  private closed = false;
  private beatsAt: number[] = []; // notices' beats to come (monotonic ms), sorted
  private saidPolling = false;

  constructor(
    private readonly groupId: string,
    private readonly memberId: () => string,
    private readonly options: MemberPushOptions,
  ) {}

  get connected(): boolean {
    return this.channel?.connected ?? false;
  }

  /** find-coordinator's `pushUrl` (undefined or "": not offered): open or move the socket, or
   * close it and poll. */
  offer(url: unknown): void {
    if (this.closed) return;
    const wanted = typeof url === "string" && url ? url : undefined;
    const current = this.channel;
    if (wanted !== undefined && this.options.enabled) {
      if (current?.url === wanted) return;
      void current?.stop();
      const notice = (delay: number): void => this.notice(delay);
      const { headersFor, logger, lookMs } = this.options;
      this.channel = new PushChannel(wanted, this.groupId, this.memberId, notice, headersFor, logger, PING_INTERVAL_MS, lookMs).start();
      return;
    }
    this.channel = undefined;
    void current?.stop();
    this.sayPolling();
  }

  private sayPolling(): void {
    if (this.saidPolling || !this.options.enabled) return; // a member kept off it says nothing
    this.saidPolling = true;
    this.options.logger.info(`push: the coordinator offers no push channel (no pushUrl); group ${this.groupId} polls at the heartbeat interval`);
  }

  /** The member's id was just given (a join answered): open the socket at once. */
  memberChanged(): void {
    this.channel?.wake();
  }

  /** Closes the socket for good (`abort`: dropped without a close frame). */
  async close(abort = false): Promise<void> {
    this.closed = true;
    const channel = this.channel;
    this.channel = undefined;
    await channel?.stop(abort);
  }

  /** A notice: heartbeat after `delayMs`, and once more SECOND_LOOK_MS later. */
  notice(delayMs: number, at: number = now()): void {
    const first = at + Math.max(0, delayMs);
    this.beatsAt = [...new Set([...this.beatsAt, first, first + SECOND_LOOK_MS])].sort((a, b) => a - b);
    this.options.onNotice();
  }

  /** The earliest notice beat due by `at` (those due are consumed), or Infinity. */
  dueBeat(at: number): number {
    const first = this.beatsAt[0];
    if (first === undefined || first > at) return Infinity;
    this.beatsAt = this.beatsAt.filter((t) => t > at);
    return first;
  }

  /** When the next notice beat is due (monotonic ms), or Infinity. */
  nextBeat(): number {
    return this.beatsAt[0] ?? Infinity;
  }

  intervalMs(coordinatorMs: number): number {
    return steadyIntervalMs(coordinatorMs, this.options.intervalMs, this.connected);
  }
}
