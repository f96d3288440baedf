// HTTP to the coordinator: JSON bodies, a timeout on every attempt, jittered retries,
// Retry-After on 429, the write budget header, and SigV4 for a deployed API (IAM auth), the
// signer loaded only when a request is signed.

import { CoordinatorUnavailable, GroupcoordError, InvalidRequest } from "./errors.js";
import { checkSignerInstalled, type Signer, loadSigner } from "./sigv4.js";
import { jitter, now, sleep } from "./timing.js";
import { type Json, checkKnownKeys, nonNegativeInteger, optionalBoolean, optionalString, positiveNumber } from "./validate.js";

const RETRYABLE_STATUS = new Set([429, 500, 502, 503, 504]);

export const TIMEOUT_HEADER = "Groupcoord-Timeout-Ms";

/** The longest a DynamoDB write the server has already started may take to land, plus the
 * request's way to API Gateway (the server's WRITE_MARGIN_MS). Each attempt tells the server
 * its budget, the attempt's timeout less this margin: the server starts no write after
 * receipt + budget, so every write of an abandoned attempt has landed by the time the client
 * gives up on it and sends anything else (docs/client.md, "Timeouts and deadlines"). */
export const WRITE_MARGIN_MS = 2000;

/** An answer of 200 or 202. */
export interface Reply {
  readonly status: number;
  readonly body: Json;
  readonly headers: Headers;
}

export interface TransportOptions {
  /** Sent as Kafka-Client-Id (default "groupcoord-client"). */
  clientId?: string;
  /** Each attempt's timeout (default 10,000 ms). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 5). */
  retries?: number;
  /** The first backoff, doubling per retry (default 50 ms), at most `maxBackoffMs` (2,000). */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** SigV4-sign every request (default: for an https URL). */
  sign?: boolean;
  /** The API's AWS region for signing (default: the execute-api host's, else AWS_REGION,
   * else AWS_DEFAULT_REGION, else us-east-1). */
  region?: string;
  /** Sent with every request besides the protocol's own headers. */
  headers?: Record<string, string>;
}

export interface CallOptions {
  timeoutMs?: number;
  retries?: number;
}

const TRANSPORT_OPTIONS = ["clientId", "timeoutMs", "retries", "backoffMs", "maxBackoffMs", "sign", "region", "headers"];

/** POSTs `/v1/<api>` to a base URL, retrying what is safe to retry.
 *
 * Every API of the contract is safe to re-send (joins and syncs are idempotent by member id, a
 * heartbeat is answered from the member's state, a commit writes the same offsets again, one
 * with writes carries its idempotency key), so network errors, 429 (after its Retry-After) and
 * 5xx are retried with jittered exponential backoff, up to `retries` more attempts and within
 * (retries + 1) x timeout overall; other 4xx are not. */
export class Transport {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly timeoutMs: number;
  readonly retries: number;
  readonly sign: boolean;
  readonly region: string | undefined;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly headers: Record<string, string>;
  private signer: Promise<Signer> | undefined;

  constructor(baseUrl: string, options: TransportOptions = {}) {
    checkKnownKeys(options, TRANSPORT_OPTIONS, "Transport options");
    this.baseUrl = checkBaseUrl(baseUrl, "baseUrl");
    this.clientId = optionalString(options.clientId, "clientId", 218) ?? "groupcoord-client";
    this.timeoutMs = positiveNumber(options.timeoutMs, "timeoutMs") ?? 10_000;
    this.retries = nonNegativeInteger(options.retries, "retries") ?? 5;
    this.backoffMs = positiveNumber(options.backoffMs, "backoffMs") ?? 50;
    this.maxBackoffMs = positiveNumber(options.maxBackoffMs, "maxBackoffMs") ?? 2000;
    this.sign = optionalBoolean(options.sign, "sign") ?? this.baseUrl.startsWith("https:");
    this.region = optionalString(options.region, "region", 64);
    this.headers = checkHeaders(options.headers);
    // Fail now, not at the first request, when the signing packages are missing.
    if (this.sign) checkSignerInstalled();
  }

  /** The same settings (and credentials) for another endpoint: the group's coordinator. */
  withBaseUrl(baseUrl: string): Transport {
    const clone = new Transport(baseUrl, {
      clientId: this.clientId,
      timeoutMs: this.timeoutMs,
      retries: this.retries,
      backoffMs: this.backoffMs,
      maxBackoffMs: this.maxBackoffMs,
      sign: this.sign,
      ...(this.region === undefined ? {} : { region: this.region }),
      headers: this.headers,
    });
    clone.signer = this.signer;
    return clone;
  }

  /** The headers of a WebSocket handshake to `url` (the push channel's `$connect`): this
   * transport's own, SigV4-signed as a GET of that URL when its requests are signed (a
   * WebSocket API with IAM auth: execute-api, in the region its host names). */
  async handshakeHeaders(url: string): Promise<Record<string, string>> {
    if (!this.sign) return { ...this.headers };
    this.signer ??= loadSigner(this.region, new URL(this.baseUrl));
    // ws:// and wss:// sign as http:// and https://: the same request line and Host.
    return (await this.signer).sign(new URL(url.replace(/^ws/, "http")), "", { ...this.headers }, "GET");
  }

  /** One API call: 200 and 202 are returned; 429/5xx/no answer are retried. Throws
   * CoordinatorUnavailable when no answer came (or only 429/5xx) within the retries,
   * InvalidRequest on 400, GroupcoordError on any other status. */
  async call(api: string, body: object, options: CallOptions = {}): Promise<Reply> {
    const perAttempt = options.timeoutMs ?? this.timeoutMs;
    const retries = options.retries ?? this.retries;
    const deadline = now() + perAttempt * (retries + 1);
    for (let attempt = 1; ; attempt++) {
      const timeoutMs = Math.ceil(Math.max(50, Math.min(perAttempt, deadline - now())));
      let reply: Reply;
      try {
        reply = await this.once(api, body, timeoutMs);
      } catch (error) {
        if (!(error instanceof NoAnswer)) throw error;
        if (attempt > retries || now() >= deadline) {
          throw new CoordinatorUnavailable(`${api}: ${this.baseUrl} did not answer: ${reason(error.cause)}`, {
            cause: error.cause,
          });
        }
        await this.pause(attempt, undefined, deadline);
        continue;
      }
      if (reply.status === 200 || reply.status === 202) return reply;
      const retryable = RETRYABLE_STATUS.has(reply.status);
      if (retryable && attempt <= retries && now() < deadline) {
        await this.pause(attempt, retryAfterMs(reply.headers.get("retry-after")), deadline);
        continue;
      }
      const message = `${api}: HTTP ${reply.status}: ${reply.body.errorMessage ?? JSON.stringify(reply.body)}`;
      const fields = { status: reply.status, error: reply.body.errorCode };
      if (reply.status === 400) throw new InvalidRequest(message, fields);
      if (retryable) throw new CoordinatorUnavailable(message, fields);
      throw new GroupcoordError(message, fields);
    }
  }

  private async pause(attempt: number, atLeastMs: number | undefined, deadline: number): Promise<void> {
    const backoff = jitter(0, Math.min(this.maxBackoffMs, this.backoffMs * 2 ** attempt));
    // A Retry-After longer than the call may last: wait what is left, then fail.
    await sleep(Math.min(Math.max(backoff, atLeastMs ?? 0), Math.max(0, deadline - now())));
  }

  private async once(api: string, body: object, timeoutMs: number): Promise<Reply> {
    const url = `${this.baseUrl}/v1/${api}`;
    const data = JSON.stringify(body);
    let headers: Record<string, string> = {
      ...this.headers,
      "content-type": "application/json",
      "kafka-client-id": this.clientId,
      [TIMEOUT_HEADER.toLowerCase()]: String(budgetMs(timeoutMs)),
    };
    if (this.sign) {
      this.signer ??= loadSigner(this.region, new URL(this.baseUrl));
      headers = await (await this.signer).sign(new URL(url), data, headers);
    }
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const response = await fetch(url, { method: "POST", body: data, headers, signal });
      const text = await response.text(); // inside the attempt: a body cut short is no answer
      return { status: response.status, body: parseBody(text), headers: response.headers };
    } catch (error) {
      throw new NoAnswer(error); // refused, reset, timed out, cut short
    }
  }
}

/** What fetch threw: the request got no (whole) answer. */
class NoAnswer extends Error {
  constructor(override readonly cause: unknown) {
    super("no answer");
  }
}

/** The TIMEOUT_HEADER value of an attempt with this timeout (WRITE_MARGIN_MS says why). */
export function budgetMs(timeoutMs: number): number {
  // The server takes 1..900,000 ms (15 minutes, Lambda's longest run).
  return Math.min(900_000, Math.max(1, Math.floor(timeoutMs - WRITE_MARGIN_MS)));
}

/** Retry-After as milliseconds: seconds or an HTTP date (RFC 9110); undefined when absent or
 * unreadable. */
export function retryAfterMs(value: string | null | undefined, nowMs: number = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const when = Date.parse(trimmed);
  return Number.isNaN(when) ? undefined : Math.max(0, when - nowMs);
}

export function checkBaseUrl(value: unknown, name: string): string {
  if (typeof value !== "string") throw new TypeError(`${name} must be an http(s) URL string, got ${typeof value}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TypeError(`${name} is not a URL: ${JSON.stringify(value)}`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || !url.host) {
    throw new TypeError(`${name} must be an http(s) URL, got ${JSON.stringify(value)}`);
  }
  if (url.search || url.hash) throw new TypeError(`${name} must not have a query or fragment: ${JSON.stringify(value)}`);
  return value.replace(/\/+$/, "");
}

function checkHeaders(headers: unknown): Record<string, string> {
  if (headers === undefined) return {};
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw new TypeError("headers must be an object of header names to string values");
  }
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value !== "string") throw new TypeError(`headers[${JSON.stringify(name)}] must be a string`);
    result[name.toLowerCase()] = value;
  }
  return result;
}

function parseBody(text: string): Json {
  if (!text) return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : { body: parsed };
  } catch {
    return { errorMessage: text.slice(0, 200) };
  }
}

function reason(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === "TimeoutError") return "timed out";
    const cause = error.cause as { code?: string; message?: string } | undefined;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}
