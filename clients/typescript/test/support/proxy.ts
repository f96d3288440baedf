// An HTTP proxy on a free loopback port in front of a real `groupcoord serve`, for what the
// network does to a client: answers it never gets, 429s and 5xx, a coordinator that moves or
// goes away. It records every request, and points find-coordinator answers at itself (or at
// `coordinator`) so that the member's later requests come through it too.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";

export interface Seen {
  api: string;
  headers: IncomingMessage["headers"];
  body: string;
  at: number;
}

/** What to do with a request: forward it (the default), answer it instead, forward it and
 * drop the answer (the client hears nothing), or hold it before forwarding. */
export type Action =
  | { kind: "forward"; holdMs?: number }
  | { kind: "answer"; status: number; headers?: Record<string, string>; body: unknown }
  | { kind: "drop-answer" }
  | { kind: "rewrite"; change: (body: Record<string, unknown>) => Record<string, unknown> };

export type Rule = (api: string, body: Record<string, unknown>, seen: Seen[]) => Action | undefined;

export class Proxy {
  readonly seen: Seen[] = [];
  rule: Rule = () => undefined;
  /** Where find-coordinator answers send the member (default: this proxy). */
  coordinator: string | undefined;
  private constructor(
    private readonly server: Server,
    readonly url: string,
    private readonly target: string,
  ) {}

  static async start(target: string): Promise<Proxy> {
    let proxy: Proxy | undefined;
    const server = createServer((req, res) => {
      // A request still held or on its way when the test ended: dropped with the connection.
      proxy?.handle(req, res).catch(() => req.socket.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    proxy = new Proxy(server, `http://127.0.0.1:${port}`, target);
    return proxy;
  }

  count(api: string): number {
    return this.seen.filter((s) => s.api === api).length;
  }

  /** Stops listening and cuts every connection: requests to it are refused from now on. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const api = (req.url ?? "").replace(/^\/v1\//, "");
    const seen = { api, headers: req.headers, body, at: Date.now() };
    this.seen.push(seen);
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(body) as Record<string, unknown>;
    } catch {
      // forwarded as it is
    }
    const action = this.rule(api, parsed, this.seen) ?? { kind: "forward" };
    if (action.kind === "answer") {
      res.writeHead(action.status, { "content-type": "application/json", ...action.headers });
      res.end(JSON.stringify(action.body));
      return;
    }
    if (action.kind === "forward" && action.holdMs) await new Promise((r) => setTimeout(r, action.holdMs));
    const answer = await this.forward(req, body);
    if (action.kind === "drop-answer") {
      req.socket.destroy(); // applied by the coordinator, never answered
      return;
    }
    let text = answer.text;
    if (api === "find-coordinator" || action.kind === "rewrite") {
      let json = JSON.parse(text) as Record<string, unknown>;
      if (api === "find-coordinator") json = this.pointAtCoordinator(json);
      if (action.kind === "rewrite") json = action.change(json);
      text = JSON.stringify(json);
    }
    res.writeHead(answer.status, answer.headers);
    res.end(text);
  }

  private async forward(req: IncomingMessage, body: string): Promise<{ status: number; headers: Record<string, string>; text: string }> {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string" && !["host", "content-length", "connection"].includes(name)) headers[name] = value;
    }
    const response = await fetch(`${this.target}${req.url ?? ""}`, { method: req.method ?? "POST", headers, body });
    const kept: Record<string, string> = { "content-type": "application/json" };
    const retryAfter = response.headers.get("retry-after");
    if (retryAfter) kept["retry-after"] = retryAfter;
    return { status: response.status, headers: kept, text: await response.text() };
  }

  private pointAtCoordinator(json: Record<string, unknown>): Record<string, unknown> {
    const coordinators = (json.coordinators ?? []) as Array<Record<string, unknown>>;
    return { ...json, coordinators: coordinators.map((c) => ({ ...c, endpoint: this.coordinator ?? this.url })) };
  }
}
