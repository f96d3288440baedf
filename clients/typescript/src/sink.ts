// The DynamoDB writes a commit carries (`member.commit(offsets, { writes })`), applied in one
// transaction with the offsets and fenced like them (docs/exactly-once.md), built from plain
// values: string S, number and bigint N (a NumberValue for an exact decimal), boolean BOOL,
// null NULL, Uint8Array B, arrays L, Map and plain objects M, Sets of strings, numbers or bytes
// SS / NS / BS. Written here, not with the SDK's marshaller, so a commit needs no package.

import { describe } from "./validate.js";

export type Write = Record<string, Record<string, unknown>>;
export type AttributeValue = Record<string, unknown>;

/** A number kept exactly as written (`new NumberValue("19.90")`), beyond a double's digits. */
export class NumberValue {
  constructor(readonly value: string) {
    if (typeof value !== "string" || !/^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(value)) {
      throw new TypeError(`NumberValue: not a decimal number: ${describe(value)}`);
    }
  }
}

export interface ExpressionOptions {
  /** ConditionExpression: the write (and the whole commit) happens only if it holds. */
  condition?: string;
  /** ExpressionAttributeNames, e.g. {"#t": "total"}. */
  names?: Record<string, string>;
  /** ExpressionAttributeValues as plain values, e.g. {":amount": 5}. */
  values?: Record<string, unknown>;
}

/** `value` in DynamoDB's typed JSON form. */
export function attributeValue(value: unknown, path = "value"): AttributeValue {
  if (typeof value === "boolean") return { BOOL: value };
  if (value === null) return { NULL: true };
  if (typeof value === "string") return { S: value };
  if (typeof value === "number" || typeof value === "bigint" || value instanceof NumberValue) return { N: numberText(value, path) };
  if (value instanceof Uint8Array) return { B: Buffer.from(value).toString("base64") };
  if (value instanceof Set) return setValue(value, path);
  if (Array.isArray(value)) return { L: value.map((v, i) => attributeValue(v, `${path}[${i}]`)) };
  if (value instanceof Map || isPlainObject(value)) return { M: item(value as Map<string, unknown> | Record<string, unknown>, path) };
  throw new TypeError(`${path}: no DynamoDB type for ${describe(value)}`);
}

/** An item (or a key) in DynamoDB's typed JSON form. */
export function item(attributes: Map<string, unknown> | Record<string, unknown>, path = "item"): Record<string, AttributeValue> {
  if (!(attributes instanceof Map) && !isPlainObject(attributes)) throw new TypeError(`${path} must be an object of attributes`);
  const entries = attributes instanceof Map ? [...attributes] : Object.entries(attributes);
  return Object.fromEntries(entries.map(([name, v]) => [name, attributeValue(v, `${path}.${name}`)]));
}

function numberText(value: number | bigint | NumberValue, path: string): string {
  if (value instanceof NumberValue) return value.value;
  if (typeof value === "number" && !Number.isFinite(value)) throw new TypeError(`${path}: DynamoDB numbers must be finite, got ${value}`);
  return String(value);
}

function setValue(values: Set<unknown>, path: string): AttributeValue {
  const all = [...values];
  if (all.length === 0) throw new TypeError(`${path}: DynamoDB sets cannot be empty`);
  if (all.every((v) => typeof v === "string")) return { SS: [...(all as string[])].sort() };
  if (all.every((v) => typeof v === "number" || typeof v === "bigint" || v instanceof NumberValue)) {
    return { NS: all.map((v) => numberText(v as number, path)).sort() };
  }
  if (all.every((v) => v instanceof Uint8Array)) return { BS: all.map((v) => Buffer.from(v as Uint8Array).toString("base64")).sort() };
  throw new TypeError(`${path}: a DynamoDB set holds strings, numbers or bytes, all of one kind`);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function checkTable(table: unknown): string {
  if (typeof table !== "string") throw new TypeError(`table must be a string, got ${describe(table)}`);
  if (!/^[A-Za-z0-9_.-]{3,255}$/.test(table)) throw new RangeError(`table: not a DynamoDB table name: ${JSON.stringify(table)}`);
  return table;
}

function expressionParts(options: ExpressionOptions = {}): Record<string, unknown> {
  const parts: Record<string, unknown> = {};
  if (options.condition !== undefined) {
    if (typeof options.condition !== "string") throw new TypeError("condition must be a string");
    parts.ConditionExpression = options.condition;
  }
  if (options.names !== undefined && Object.keys(options.names).length > 0) {
    for (const [k, v] of Object.entries(options.names)) {
      if (typeof v !== "string") throw new TypeError(`names[${JSON.stringify(k)}] must be a string`);
    }
    parts.ExpressionAttributeNames = { ...options.names };
  }
  if (options.values !== undefined && Object.keys(options.values).length > 0) {
    parts.ExpressionAttributeValues = item(options.values, "values");
  }
  return parts;
}

/** A Put of `attributes` into `table`, if `condition` holds. */
export function put(table: string, attributes: Record<string, unknown>, options?: ExpressionOptions): Write {
  return { Put: { TableName: checkTable(table), Item: item(attributes), ...expressionParts(options) } };
}

/** An Update of the item at `key` (e.g. "ADD #n :k"), if `condition` holds. */
export function update(table: string, key: Record<string, unknown>, expression: string, options?: ExpressionOptions): Write {
  if (typeof expression !== "string" || expression.length === 0) throw new TypeError("expression must be a non-empty string");
  return { Update: { TableName: checkTable(table), Key: item(key, "key"), UpdateExpression: expression, ...expressionParts(options) } };
}

/** A Delete of the item at `key`, if `condition` holds. */
function deleteItem(table: string, key: Record<string, unknown>, options?: ExpressionOptions): Write {
  return { Delete: { TableName: checkTable(table), Key: item(key, "key"), ...expressionParts(options) } };
}
export { deleteItem as delete };

/** No write: the transaction (and the commit) happens only if `condition` holds on the item at
 * `key`. */
export function conditionCheck(
  table: string,
  key: Record<string, unknown>,
  condition: string,
  options?: Omit<ExpressionOptions, "condition">,
): Write {
  if (typeof condition !== "string" || condition.length === 0) throw new TypeError("condition must be a non-empty string");
  return { ConditionCheck: { TableName: checkTable(table), Key: item(key, "key"), ...expressionParts({ ...options, condition }) } };
}

const OPERATIONS = ["Put", "Update", "Delete", "ConditionCheck"];

/** Checks a commit's writes before they are sent: each one operation of the four. */
export function checkWrites(writes: unknown): Write[] {
  if (!Array.isArray(writes)) throw new TypeError(`writes must be an array of writes (see sink), got ${describe(writes)}`);
  if (writes.length > 98) throw new RangeError(`writes: at most 98 in one commit, got ${writes.length}`);
  writes.forEach((write, i) => {
    const keys = isPlainObject(write) ? Object.keys(write) : [];
    if (keys.length !== 1 || !OPERATIONS.includes(keys[0] as string) || !isPlainObject(write[keys[0] as string])) {
      throw new TypeError(`writes[${i}] must be one of ${OPERATIONS.join(", ")} (build it with sink.put/update/delete/conditionCheck)`);
    }
  });
  return writes as Write[];
}
