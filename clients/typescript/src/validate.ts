// Argument checks: a bad argument is a TypeError (wrong kind) or RangeError (out of bounds)
// naming it, thrown before anything is sent. Bounds are the coordinator's (docs/limits.md).

/** A JSON object as the coordinator answers it. */
export type Json = Record<string, any>;

export const MAX_ID_LENGTH = 255; // groupId, memberId, instance ids
export const MAX_TOPIC_LENGTH = 249; // Kafka's topic name limit
export const MAX_INT32 = 2 ** 31 - 1;

export function checkKnownKeys(options: unknown, known: readonly string[], what: string): void {
  if (options === undefined) return;
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new TypeError(`${what} must be an object`);
  }
  const unknown = Object.keys(options).filter((key) => !known.includes(key));
  if (unknown.length > 0) {
    throw new TypeError(`${what}: unknown option(s) ${unknown.join(", ")}; known: ${known.join(", ")}`);
  }
}

export function requiredString(value: unknown, name: string, maxLength: number): string {
  if (typeof value !== "string") throw new TypeError(`${name} must be a string, got ${describe(value)}`);
  if (value.length === 0) throw new RangeError(`${name} must not be empty`);
  if (value.length > maxLength) throw new RangeError(`${name} must be at most ${maxLength} characters`);
  return value;
}

export function optionalString(value: unknown, name: string, maxLength: number): string | undefined {
  return value === undefined || value === null ? undefined : requiredString(value, name, maxLength);
}

export function optionalBoolean(value: unknown, name: string): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw new TypeError(`${name} must be a boolean, got ${describe(value)}`);
  return value;
}

export function positiveNumber(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || Number.isNaN(value)) throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!(value > 0) || !Number.isFinite(value)) throw new RangeError(`${name} must be a positive finite number, got ${value}`);
  return value;
}

export function nonNegativeInteger(value: unknown, name: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) throw new TypeError(`${name} must be an integer, got ${describe(value)}`);
  if (value < 0 || !Number.isSafeInteger(value)) throw new RangeError(`${name} must be a non-negative safe integer, got ${value}`);
  return value;
}

/** An integer in [min, max] (milliseconds, counts). */
export function integerIn(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) throw new TypeError(`${name} must be an integer, got ${describe(value)}`);
  if (value < min || value > max) throw new RangeError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}
