// examples/typescript/file-worker.ts as a user runs it, beside its Python twin
// (examples/file_worker.py) in the same group: each in its own process, they share a folder of
// partition files; every line is processed and its offset committed.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { Transport } from "../src/index.js";
import { CONSUMER_SESSION_MS, CONVERGE_MS, SETTINGS, unique, waitUntil } from "./support/group.js";
import { JsonLinesProcess, PACKAGE_ROOT, REPO_ROOT, type Server, python, startServe } from "./support/processes.js";

const PARTITIONS = 4;
const LINES = 30;

/** Builds the example with this package's TypeScript, into `dir`, where node_modules/groupcoord
 * is this package (as `npm install` in examples/typescript links it). */
async function buildExample(dir: string): Promise<string> {
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(PACKAGE_ROOT, join(dir, "node_modules", "groupcoord"), "dir");
  const tsconfig = {
    extends: join(REPO_ROOT, "examples", "typescript", "tsconfig.json"),
    compilerOptions: {
      outDir: join(dir, "dist"),
      rootDir: join(REPO_ROOT, "examples", "typescript"),
      typeRoots: [join(PACKAGE_ROOT, "node_modules", "@types")],
      paths: { groupcoord: [join(PACKAGE_ROOT, "dist", "src", "index.d.ts")] },
    },
    files: [join(REPO_ROOT, "examples", "typescript", "file-worker.ts")],
  };
  writeFileSync(join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
  await promisify(execFile)(process.execPath, [join(PACKAGE_ROOT, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")]);
  return join(dir, "dist", "file-worker.js");
}

async function committed(url: string, group: string, topic: string): Promise<Record<number, number>> {
  const body = (await new Transport(url).call("offset-fetch", { groups: [{ groupId: group }] })).body;
  const result: Record<number, number> = {};
  for (const t of body.groups[0].topics ?? []) {
    if (t.name === topic) for (const p of t.partitions) result[p.partitionIndex] = p.committedOffset;
  }
  return result;
}

describe("the example file worker", () => {
  let serve: Server;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "groupcoord-example-"));
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  let building: Promise<string> | undefined;
  const built = (): Promise<string> => (building ??= buildExample(dir)); // once for the tests

  it("--help prints the usage; a mistyped option is one line and the usage, no stack", async () => {
    const worker = await built();
    const run = promisify(execFile);
    const help = await run(process.execPath, [worker, "--help"]);
    assert.match(help.stdout, /^usage: node dist\/file-worker\.js FOLDER/);
    assert.match(help.stdout, /--session-timeout-ms/);
    const wrong = await run(process.execPath, [worker, "--sesion-timeout-ms", "5"]).then(
      () => assert.fail("an unknown option was accepted"),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /^file-worker: Unknown option '--sesion-timeout-ms'/);
    assert.doesNotMatch(wrong.stderr, /\n\s+at /); // no stack trace
  });

  it("a TypeScript and a Python worker process and commit every line", async () => {
    const worker = await built();
    const source = join(dir, unique("lines"));
    mkdirSync(source);
    const expected = new Set<string>();
    for (let p = 0; p < PARTITIONS; p++) {
      const lines = Array.from({ length: LINES }, (_, n) => `record ${p}/${n}`);
      writeFileSync(join(source, `${p}.txt`), lines.map((l) => `${l}\n`).join(""));
      lines.forEach((line, n) => expected.add(JSON.stringify([p, n, line])));
    }
    const group = unique("workers");
    const common = [source, "--url", serve.url, "--group", group, "--delay", "0.02", "--batch", "5", "--session-timeout-ms", String(CONSUMER_SESSION_MS)];
    const workers = {
      ts: new JsonLinesProcess(process.execPath, [worker, ...common, "--name", "ts", "--output", join(dir, "ts.jsonl")]),
      py: new JsonLinesProcess(python(), [join(REPO_ROOT, "examples", "file_worker.py"), ...common, "--name", "py", "--output", join(dir, "py.jsonl")]),
    };
    const topic = source.split("/").at(-1) as string;
    const done = Object.fromEntries(Array.from({ length: PARTITIONS }, (_, p) => [p, LINES]));
    try {
      await waitUntil(async () => JSON.stringify(await committed(serve.url, group, topic)) === JSON.stringify(done), CONVERGE_MS, "every line committed", 200);
    } finally {
      await Promise.all(Object.values(workers).map((w) => w.stop()));
    }
    for (const [name, w] of Object.entries(workers)) {
      assert.equal(w.exitCode, 0, w.log());
      assert.match(w.log(), new RegExp(`\\[${name}\\] closed`), w.log());
      assert.doesNotMatch(w.log(), /Traceback|Error/, w.log());
    }
    const processed = new Set<string>();
    for (const name of ["ts", "py"]) {
      const file = join(dir, `${name}.jsonl`);
      for (const row of existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : []) {
        const r = JSON.parse(row) as { partition: number; offset: number; line: string };
        processed.add(JSON.stringify([r.partition, r.offset, r.line]));
      }
    }
    assert.deepEqual([...processed].sort(), [...expected].sort(), "a line was not processed"); // every line, at least once
  });
});
