// SigV4 for a deployed coordinator (API Gateway HTTP API, IAM auth, service execute-api), with
// the AWS SDK's default credential chain. The only module that needs packages beyond Node.js:
// @smithy/signature-v4 and @aws-sdk/credential-provider-node, imported on the first signed
// request, so a local user (an http URL) loads neither.

import { createHash, createHmac, type Hash, type Hmac } from "node:crypto";
import type { SignatureV4 } from "@smithy/signature-v4";
import { GroupcoordError } from "./errors.js";

type CredentialProvider = ReturnType<typeof import("@aws-sdk/credential-provider-node").defaultProvider>;

const PACKAGES = ["@smithy/signature-v4", "@aws-sdk/credential-provider-node"];

export const SIGNER_MISSING =
  "signing requests with SigV4 (an https URL, or sign: true) needs the packages " +
  `${PACKAGES.join(" and ")} (dependencies of groupcoord: install them beside it, or pass ` +
  "sign: false for an endpoint without IAM auth)";

/** Throws GroupcoordError naming the packages when they cannot be found. */
export function checkSignerInstalled(): void {
  for (const name of PACKAGES) {
    try {
      import.meta.resolve(name);
    } catch (error) {
      throw new GroupcoordError(SIGNER_MISSING, { cause: error });
    }
  }
}

export interface Signer {
  /** The headers to send: `headers` plus the signature's. A GET (a WebSocket handshake) is
   * signed with its query, in the region its host names unless one was given. */
  sign(url: URL, body: string, headers: Record<string, string>, method?: "POST" | "GET"): Promise<Record<string, string>>;
}

/** A signer for requests to `baseUrl`'s API, in `region` (else the execute-api host's region,
 * else AWS_REGION or AWS_DEFAULT_REGION, else us-east-1). */
export async function loadSigner(region: string | undefined, baseUrl: URL): Promise<Signer> {
  let modules: [typeof import("@smithy/signature-v4"), typeof import("@aws-sdk/credential-provider-node")];
  try {
    modules = await Promise.all([import("@smithy/signature-v4"), import("@aws-sdk/credential-provider-node")]);
  } catch (error) {
    throw new GroupcoordError(SIGNER_MISSING, { cause: error });
  }
  const [{ SignatureV4 }, { defaultProvider }] = modules;
  const credentials = defaultProvider(); // memoized; refreshes credentials that expire
  const signer = new SignatureV4({
    credentials: withClearError(credentials),
    region: region ?? signingRegion(baseUrl.hostname),
    service: "execute-api",
    sha256: Sha256,
  });
  return {
    sign: (url, body, headers, method = "POST") =>
      signRequest(signer, url, body, headers, method, method === "GET" ? (region ?? signingRegion(url.hostname)) : undefined),
  };
}

/** The region to sign for when none is given. */
export function signingRegion(hostname: string, env: NodeJS.ProcessEnv = process.env): string {
  const fromHost = /\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$/.exec(hostname)?.[1];
  return fromHost ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? "us-east-1";
}

async function signRequest(
  signer: SignatureV4,
  url: URL,
  body: string,
  headers: Record<string, string>,
  method: "POST" | "GET",
  region: string | undefined,
): Promise<Record<string, string>> {
  const request = {
    method,
    protocol: url.protocol,
    hostname: url.hostname,
    ...(url.port ? { port: Number(url.port) } : {}),
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: { ...headers, host: url.host },
    body,
  };
  const signed = await signer.sign(request, region === undefined ? {} : { signingRegion: region });
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(signed.headers)) {
    // fetch sets Host from the URL itself, to the value signed here.
    if (name.toLowerCase() !== "host") result[name] = value;
  }
  return result;
}

function withClearError(provider: CredentialProvider): CredentialProvider {
  return async (options) => {
    try {
      return await provider(options);
    } catch (error) {
      throw new GroupcoordError(
        "no AWS credentials found to sign the request with (set AWS_PROFILE, " +
          "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or run with a role): " +
          (error instanceof Error ? error.message : String(error)),
        { cause: error },
      );
    }
  };
}

/** SHA-256 and HMAC-SHA-256 from node:crypto, in the shape the signer takes. */
class Sha256 {
  private hash: Hash | Hmac;
  private readonly secret: string | ArrayBuffer | ArrayBufferView | undefined;

  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.secret = secret;
    this.hash = Sha256.start(secret);
  }

  private static start(secret: string | ArrayBuffer | ArrayBufferView | undefined): Hash | Hmac {
    if (secret === undefined) return createHash("sha256");
    return createHmac("sha256", typeof secret === "string" ? secret : toBytes(secret));
  }

  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(typeof data === "string" ? data : toBytes(data));
  }

  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }

  reset(): void {
    this.hash = Sha256.start(this.secret);
  }
}

function toBytes(data: ArrayBuffer | ArrayBufferView): Uint8Array {
  return ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : new Uint8Array(data);
}
