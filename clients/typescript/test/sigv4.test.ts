// SigV4 for a deployed stack: a signed request checked by botocore's signer (an independent
// implementation), a signed member working end to end, credentials from the default provider
// chain (and a clear error without any), and the signing packages loaded only for a signed
// request: the package without them still works over http.

import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";
import { GroupMember, Transport } from "../src/index.js";
import { CONSUMER_SESSION_MS, CONVERGE_MS, SETTINGS, createTopic, unique, waitUntil } from "./support/group.js";
import { PACKAGE_ROOT, type Server, python, startServe } from "./support/processes.js";
import { Proxy } from "./support/proxy.js";

const ACCESS_KEY = "AKIDGROUPCOORDTEST";
const SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const TOKEN = "session-token-for-the-test";

interface Captured {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** An HTTP endpoint on a free loopback port that records what it receives. */
async function captureServer(): Promise<{ url: string; seen: Captured[]; close: () => Promise<void> }> {
  const seen: Captured[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = `http://${req.headers.host}${req.url}`;
    seen.push({ method: req.method ?? "", url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"throttleTimeMs": 0}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const close = (): Promise<void> => new Promise((resolve) => server.close(() => resolve()));
  return { url: `http://127.0.0.1:${port}`, seen, close };
}

/** Runs an ES module in a fresh node with only this environment; resolves to its stdout. */
async function runNode(dir: string, source: string, env: NodeJS.ProcessEnv): Promise<string> {
  const file = join(dir, `check-${Math.random().toString(16).slice(2)}.mjs`);
  writeFileSync(file, source);
  const { stdout } = await promisify(execFile)(process.execPath, [file], { env, encoding: "utf8", cwd: dir, timeout: 60_000 });
  return stdout;
}

describe("SigV4", { concurrency: true }, () => {
  let serve: Server;
  before(async () => {
    // The default provider chain's first source: the environment.
    Object.assign(process.env, { AWS_ACCESS_KEY_ID: ACCESS_KEY, AWS_SECRET_ACCESS_KEY: SECRET_KEY, AWS_SESSION_TOKEN: TOKEN });
    serve = await startServe(SETTINGS);
  });
  after(async () => {
    await serve?.stop();
  });

  it("signs a request as botocore does", async () => {
    const capture = await captureServer();
    try {
      await new Transport(capture.url, { sign: true, region: "eu-west-1", clientId: "signed" }).call("metadata", { topics: null });
      const request = capture.seen[0] as Captured;
      const authorization = String(request.headers.authorization);
      assert.match(authorization, new RegExp(`^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY}/\\d{8}/eu-west-1/execute-api/aws4_request, SignedHeaders=`));
      for (const header of ["host", "content-type", "kafka-client-id", "groupcoord-timeout-ms", "x-amz-date", "x-amz-security-token"]) {
        assert.match(authorization, new RegExp(`SignedHeaders=[^,]*\\b${header}\\b`), `${header} is not signed`);
      }
      assert.equal(request.headers["x-amz-security-token"], TOKEN);
      const input = JSON.stringify({ ...request, accessKey: ACCESS_KEY, secretKey: SECRET_KEY, region: "eu-west-1" });
      const verdict = JSON.parse(execFileSync(python(), [join(PACKAGE_ROOT, "test", "support", "verify_sigv4.py")], { input, encoding: "utf8" }));
      assert.equal(verdict.got, verdict.expected, "botocore computes another signature");
    } finally {
      await capture.close();
    }
  });

  it("signs every request of a member that signs (sign: true)", async () => {
    const topic = unique("signed");
    await createTopic(serve.url, topic, 1);
    const proxy = await Proxy.start(serve.url);
    const member = new GroupMember(proxy.url, unique("signed"), { topics: [topic], sessionTimeoutMs: CONSUMER_SESSION_MS, sign: true, region: "us-west-2" });
    try {
      await waitUntil(() => member.poll(100).then((owned) => owned.length === 1), CONVERGE_MS, "the signed member owns its partition");
      await member.commit([{ topic, partition: 0, offset: 3 }]);
      assert.ok(proxy.seen.length >= 3);
      for (const request of proxy.seen) {
        assert.match(String(request.headers.authorization), /Credential=AKIDGROUPCOORDTEST\/\d{8}\/us-west-2\/execute-api\//, request.api);
      }
    } finally {
      await member.close();
      await proxy.close();
    }
  });

  it("fails clearly when the default chain finds no credentials", async () => {
    const capture = await captureServer();
    const home = mkdtempSync(join(tmpdir(), "groupcoord-nocreds-"));
    try {
      const env = { PATH: process.env.PATH, HOME: home, AWS_EC2_METADATA_DISABLED: "true" };
      const source = `
        import { Transport } from ${JSON.stringify(join(PACKAGE_ROOT, "dist", "src", "index.js"))};
        try {
          await new Transport(${JSON.stringify(capture.url)}, { sign: true }).call("metadata", {});
          console.log(JSON.stringify({ sent: true }));
        } catch (error) {
          console.log(JSON.stringify({ name: error.name, message: error.message }));
        }`;
      const outcome = JSON.parse(await runNode(home, source, env));
      assert.equal(outcome.name, "GroupcoordError");
      assert.match(outcome.message, /no AWS credentials found/);
      assert.equal(capture.seen.length, 0, "an unsigned request was sent");
    } finally {
      rmSync(home, { recursive: true, force: true });
      await capture.close();
    }
  });

  it("needs no signing package over http, and names them for https", async () => {
    // The package as installed without its dependencies: nothing but groupcoord in node_modules.
    const dir = mkdtempSync(join(tmpdir(), "groupcoord-nodeps-"));
    try {
      const installed = join(dir, "node_modules", "groupcoord");
      mkdirSync(installed, { recursive: true });
      cpSync(join(PACKAGE_ROOT, "package.json"), join(installed, "package.json"));
      cpSync(join(PACKAGE_ROOT, "dist", "src"), join(installed, "dist", "src"), { recursive: true });
      const topic = unique("nodeps");
      await createTopic(serve.url, topic, 1);
      const source = `
        import { GroupMember, Transport } from "groupcoord";
        const member = new GroupMember(${JSON.stringify(serve.url)}, "nodeps", { topics: [${JSON.stringify(topic)}] });
        let owned = [];
        for (let i = 0; i < 300 && owned.length === 0; i++) owned = await member.poll(100);
        await member.commit(owned.map((tp) => ({ ...tp, offset: 1 })));
        await member.close();
        let https;
        try { new Transport("https://abc123.execute-api.eu-west-1.amazonaws.com"); } catch (error) { https = error.name + ": " + error.message; }
        console.log(JSON.stringify({ owned: owned.length, https }));`;
      const outcome = JSON.parse(await runNode(dir, source, { PATH: process.env.PATH, HOME: dir }));
      assert.equal(outcome.owned, 1);
      assert.match(outcome.https, /^GroupcoordError: signing requests with SigV4 .* needs the packages @smithy\/signature-v4 and @aws-sdk\/credential-provider-node/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
