// Request fingerprints, as docs/protocol.md ("Request fingerprint") specifies them and the Go SDK
// (package fingerprint) computes them: `sha256:` + hex SHA-256 over a payload's canonical bytes.
// The canonical form keeps every number exactly as written, so it cannot go through JSON.parse;
// this is a byte-level parser of its own. fingerprint/testdata/vectors.json holds the vectors both
// SDKs reproduce (test/fingerprint.test.ts).

import { createHash } from "node:crypto";

/** The v1 algorithm's name: rows written before v2 stay comparable under it. */
export const ALGORITHM_V1 = "canonical-json-v1";
/** The prefix of every v2 algorithm's name; 8 hex digits of the options' digest follow. */
export const V2_PREFIX = "sha256-canon-v2+";

/** Fingerprint options: payload members left out, and arrays whose order carries no meaning. */
export interface Options {
  exclude?: string[];
  sets?: string[];
}

/** A hasher of one algorithm: v1, or v2 under its options. */
export interface Hasher {
  /** The name stored in request_hash_alg beside every hash this hasher makes. */
  readonly algorithm: string;
  /** The options' canonical encoding, stored in fingerprint_algorithms ("" for v1). */
  readonly optionsEncoded: string;
  /** The exact bytes the hash is taken over. */
  canonical(payload: Uint8Array): Uint8Array;
  /** "sha256:<hex>" over canonical(payload). */
  sum(payload: Uint8Array): string;
}

/** Thrown for options that name no member (an empty segment). */
export class InvalidOptionsError extends Error {}

/** The v1 hasher. */
export function v1(): Hasher {
  return {
    algorithm: ALGORITHM_V1,
    optionsEncoded: "",
    canonical: canonicalV1,
    sum: (p) => sha256(canonicalV1(p)),
  };
}

/** The v2 hasher under opts. */
export function v2(opts: Options = {}): Hasher {
  const exclude = normaliseList(opts.exclude);
  const sets = normaliseList(opts.sets);
  const encoded = `{"exclude":[${exclude.map(encodeString).join(",")}],"sets":[${sets.map(encodeString).join(",")}]}`;
  const digest = createHash("sha256").update(encoded, "utf8").digest("hex");
  const ex = exclude.map(parsePattern);
  const st = sets.map(parsePattern);
  const canonical = (p: Uint8Array) => canonicalV2(p, ex, st);
  return {
    algorithm: V2_PREFIX + digest.slice(0, 8),
    optionsEncoded: encoded,
    canonical,
    sum: (p) => sha256(canonical(p)),
  };
}

/** The v1 fingerprint of payload, which result hashes use too. */
export function payloadHash(payload: Uint8Array): string {
  return sha256(canonicalV1(payload));
}

function sha256(b: Uint8Array): string {
  return "sha256:" + createHash("sha256").update(b).digest("hex");
}

function normaliseList(list: string[] | undefined): string[] {
  const sorted = [...new Set(list ?? [])].sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
  return sorted;
}

type Pattern = string[];

function parsePattern(p: string): Pattern {
  const segs = p.split(".");
  if (segs.some((s) => s === "")) {
    throw new InvalidOptionsError(`fingerprint option pattern ${JSON.stringify(p)} has an empty segment`);
  }
  return segs;
}

function matches(patterns: Pattern[], path: string[]): boolean {
  return patterns.some((p) => p.length === path.length && p.every((seg, i) => seg === "*" || seg === path[i]));
}

// ---- the value tree -------------------------------------------------------------------------

type Value =
  | { kind: "object"; members: Map<string, Value> }
  | { kind: "array"; items: Value[] }
  | { kind: "string"; value: string }
  | { kind: "literal"; text: string }; // a number as written, true, false, null

class SyntaxErr extends Error {}

// Frame is an open container while parsing, with the key of the member being read.
interface Frame {
  value: Value;
  key: string;
}

const MAX_DEPTH = 10000; // encoding/json's nesting limit

function isJSONSpace(b: number): boolean {
  return b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
}

class Parser {
  pos = 0;
  constructor(readonly b: Uint8Array) {}

  skipSpace(): void {
    while (this.pos < this.b.length && isJSONSpace(this.b[this.pos])) this.pos++;
  }

  // parse reads one JSON value without recursion (an explicit stack), so a payload nested as deep
  // as encoding/json allows (10,000 levels) does not exhaust the call stack.
  parse(): Value {
    const stack: Frame[] = [];
    for (;;) {
      // A value starts here.
      this.skipSpace();
      if (this.pos >= this.b.length) throw new SyntaxErr("unexpected end");
      const c = this.b[this.pos];
      let done: Value | undefined;
      if (c === 0x7b || c === 0x5b) {
        if (stack.length + 1 > MAX_DEPTH) throw new SyntaxErr("too deep");
        this.pos++;
        this.skipSpace();
        if (c === 0x7b) {
          if (this.b[this.pos] === 0x7d) {
            this.pos++;
            done = { kind: "object", members: new Map() };
          } else {
            stack.push({ value: { kind: "object", members: new Map() }, key: this.key() });
            continue;
          }
        } else if (this.b[this.pos] === 0x5d) {
          this.pos++;
          done = { kind: "array", items: [] };
        } else {
          stack.push({ value: { kind: "array", items: [] }, key: "" });
          continue;
        }
      } else {
        done = this.scalar(c);
      }
      // A value ended: add it to its container, and close every container that ends with it.
      for (;;) {
        const top = stack[stack.length - 1];
        if (!top) return done;
        if (top.value.kind === "object") {
          top.value.members.delete(top.key); // a repeated key keeps its last value
          top.value.members.set(top.key, done);
        } else if (top.value.kind === "array") {
          top.value.items.push(done);
        }
        this.skipSpace();
        const d = this.b[this.pos++];
        if (d === 0x2c) {
          if (top.value.kind === "object") top.key = this.key();
          break;
        }
        if ((d === 0x7d && top.value.kind === "object") || (d === 0x5d && top.value.kind === "array")) {
          stack.pop();
          done = top.value;
          continue;
        }
        throw new SyntaxErr("container");
      }
    }
  }

  // key reads an object member's key and its colon.
  key(): string {
    this.skipSpace();
    if (this.b[this.pos] !== 0x22) throw new SyntaxErr("object key");
    const k = this.string();
    this.skipSpace();
    if (this.b[this.pos] !== 0x3a) throw new SyntaxErr("colon");
    this.pos++;
    return k;
  }

  scalar(c: number): Value {
    if (c === 0x22) return { kind: "string", value: this.string() };
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return { kind: "literal", text: this.number() };
    for (const lit of ["true", "false", "null"]) {
      if (this.matchASCII(lit)) {
        this.pos += lit.length;
        return { kind: "literal", text: lit };
      }
    }
    throw new SyntaxErr(`unexpected byte ${c}`);
  }

  matchASCII(s: string): boolean {
    for (let i = 0; i < s.length; i++) {
      if (this.b[this.pos + i] !== s.charCodeAt(i)) return false;
    }
    return true;
  }

  number(): string {
    const start = this.pos;
    const b = this.b;
    const digit = (i: number) => b[i] >= 0x30 && b[i] <= 0x39;
    if (b[this.pos] === 0x2d) this.pos++;
    if (b[this.pos] === 0x30) {
      this.pos++;
    } else if (digit(this.pos)) {
      while (digit(this.pos)) this.pos++;
    } else {
      throw new SyntaxErr("number");
    }
    if (b[this.pos] === 0x2e) {
      this.pos++;
      if (!digit(this.pos)) throw new SyntaxErr("fraction");
      while (digit(this.pos)) this.pos++;
    }
    if (b[this.pos] === 0x65 || b[this.pos] === 0x45) {
      this.pos++;
      if (b[this.pos] === 0x2b || b[this.pos] === 0x2d) this.pos++;
      if (!digit(this.pos)) throw new SyntaxErr("exponent");
      while (digit(this.pos)) this.pos++;
    }
    return Buffer.from(b.subarray(start, this.pos)).toString("latin1");
  }

  // string decodes a JSON string as encoding/json does: escapes resolved, a lone surrogate escape
  // and every byte of invalid UTF-8 becoming U+FFFD.
  string(): string {
    this.pos++; // "
    let out = "";
    const b = this.b;
    for (;;) {
      if (this.pos >= b.length) throw new SyntaxErr("unterminated string");
      const c = b[this.pos];
      if (c === 0x22) {
        this.pos++;
        return out;
      }
      if (c < 0x20) throw new SyntaxErr("control character in string");
      if (c === 0x5c) {
        const e = b[this.pos + 1];
        this.pos += 2;
        switch (e) {
          case 0x22: out += '"'; break;
          case 0x5c: out += "\\"; break;
          case 0x2f: out += "/"; break;
          case 0x62: out += "\b"; break;
          case 0x66: out += "\f"; break;
          case 0x6e: out += "\n"; break;
          case 0x72: out += "\r"; break;
          case 0x74: out += "\t"; break;
          case 0x75: {
            let r = this.hex4();
            if (r >= 0xd800 && r < 0xdc00) {
              // A high surrogate pairs only with a low surrogate escape right after it.
              if (b[this.pos] === 0x5c && b[this.pos + 1] === 0x75) {
                const save = this.pos;
                this.pos += 2;
                const lo = this.hex4();
                if (lo >= 0xdc00 && lo < 0xe000) {
                  out += String.fromCodePoint(0x10000 + ((r - 0xd800) << 10) + (lo - 0xdc00));
                  break;
                }
                this.pos = save;
              }
              r = 0xfffd;
            } else if (r >= 0xdc00 && r < 0xe000) {
              r = 0xfffd;
            }
            out += String.fromCodePoint(r);
            break;
          }
          default:
            throw new SyntaxErr("escape");
        }
        continue;
      }
      if (c < 0x80) {
        out += String.fromCharCode(c);
        this.pos++;
        continue;
      }
      const [r, size] = decodeRune(b, this.pos);
      out += String.fromCodePoint(r);
      this.pos += size;
    }
  }

  hex4(): number {
    const s = Buffer.from(this.b.subarray(this.pos, this.pos + 4)).toString("latin1");
    if (!/^[0-9a-fA-F]{4}$/.test(s)) throw new SyntaxErr("\\u escape");
    this.pos += 4;
    return parseInt(s, 16);
  }
}

// decodeRune is Go's utf8.DecodeRune: a valid sequence gives its code point; anything else gives
// U+FFFD for one byte.
function decodeRune(b: Uint8Array, i: number): [number, number] {
  const c0 = b[i];
  const cont = (k: number, lo = 0x80, hi = 0xbf) => i + k < b.length && b[i + k] >= lo && b[i + k] <= hi;
  if (c0 >= 0xc2 && c0 <= 0xdf && cont(1)) return [((c0 & 0x1f) << 6) | (b[i + 1] & 0x3f), 2];
  if (c0 >= 0xe0 && c0 <= 0xef) {
    const lo = c0 === 0xe0 ? 0xa0 : 0x80;
    const hi = c0 === 0xed ? 0x9f : 0xbf;
    if (cont(1, lo, hi) && cont(2)) return [((c0 & 0x0f) << 12) | ((b[i + 1] & 0x3f) << 6) | (b[i + 2] & 0x3f), 3];
  }
  if (c0 >= 0xf0 && c0 <= 0xf4) {
    const lo = c0 === 0xf0 ? 0x90 : 0x80;
    const hi = c0 === 0xf4 ? 0x8f : 0xbf;
    if (cont(1, lo, hi) && cont(2) && cont(3)) {
      return [((c0 & 0x07) << 18) | ((b[i + 1] & 0x3f) << 12) | ((b[i + 2] & 0x3f) << 6) | (b[i + 3] & 0x3f), 4];
    }
  }
  return [0xfffd, 1];
}

function validUTF8(b: Uint8Array): boolean {
  for (let i = 0; i < b.length; ) {
    if (b[i] < 0x80) {
      i++;
      continue;
    }
    const [r, size] = decodeRune(b, i);
    if (r === 0xfffd && size === 1) return false;
    i += size;
  }
  return true;
}

// Go's unicode.IsSpace over a decoded rune, for v1's trailing white space (bytes.TrimSpace).
function isUnicodeSpace(r: number): boolean {
  return (
    r === 0x09 || r === 0x0a || r === 0x0b || r === 0x0c || r === 0x0d || r === 0x20 || r === 0x85 || r === 0xa0 ||
    r === 0x1680 || (r >= 0x2000 && r <= 0x200a) || r === 0x2028 || r === 0x2029 || r === 0x202f || r === 0x205f ||
    r === 0x3000
  );
}

function onlyUnicodeSpace(b: Uint8Array, from: number): boolean {
  for (let i = from; i < b.length; ) {
    const [r, size] = b[i] < 0x80 ? [b[i], 1] : decodeRune(b, i);
    if ((r === 0xfffd && size === 1) || !isUnicodeSpace(r)) return false;
    i += size;
  }
  return true;
}

function parseOne(b: Uint8Array): { v: Value; rest: number } | undefined {
  const p = new Parser(b);
  try {
    const v = p.parse();
    return { v, rest: p.pos };
  } catch (e) {
    if (e instanceof SyntaxErr) return undefined;
    throw e;
  }
}

function canonicalV1(payload: Uint8Array): Uint8Array {
  const parsed = parseOne(payload);
  if (!parsed || !onlyUnicodeSpace(payload, parsed.rest)) return payload;
  return Buffer.from(encode(parsed.v), "utf8");
}

function canonicalV2(payload: Uint8Array, exclude: Pattern[], sets: Pattern[]): Uint8Array {
  if (!validUTF8(payload)) return payload;
  const parsed = parseOne(payload);
  if (!parsed) return payload;
  for (let i = parsed.rest; i < payload.length; i++) {
    if (!isJSONSpace(payload[i])) return payload;
  }
  const v = exclude.length > 0 || sets.length > 0 ? normalise(parsed.v, exclude, sets) : parsed.v;
  return Buffer.from(encode(v), "utf8");
}

// normalise removes excluded members (top down) and sorts set arrays (children first), without
// recursion. It changes v in place.
function normalise(v: Value, exclude: Pattern[], sets: Pattern[]): Value {
  const arrays: { value: Value & { kind: "array" }; path: string[] }[] = [];
  const todo: { value: Value; path: string[] }[] = [{ value: v, path: [] }];
  while (todo.length > 0) {
    const { value, path } = todo.pop()!;
    if (value.kind === "object") {
      for (const [k, child] of [...value.members]) {
        const childPath = [...path, k];
        if (matches(exclude, childPath)) {
          value.members.delete(k);
        } else {
          todo.push({ value: child, path: childPath });
        }
      }
    } else if (value.kind === "array") {
      if (path.length > 0 && matches(sets, path)) arrays.push({ value, path });
      for (const el of value.items) todo.push({ value: el, path });
    }
  }
  // A set nested in another was found after it: sorting in reverse order sorts it first.
  for (let i = arrays.length - 1; i >= 0; i--) {
    const a = arrays[i].value;
    const keyed = a.items.map((el) => ({ el, bytes: Buffer.from(encode(el), "utf8") }));
    keyed.sort((x, y) => Buffer.compare(x.bytes, y.bytes));
    a.items = keyed.map((k) => k.el);
  }
  return v;
}

// encode writes v as encoding/json does with HTML escaping off: keys sorted by their UTF-8 bytes,
// no white space, numbers as written. It uses an explicit stack, as parse does.
function encode(v: Value): string {
  const parts: string[] = [];
  const todo: (Value | string)[] = [v];
  while (todo.length > 0) {
    const next = todo.pop()!;
    if (typeof next === "string") {
      parts.push(next);
      continue;
    }
    switch (next.kind) {
      case "literal":
        parts.push(next.text);
        break;
      case "string":
        parts.push(encodeString(next.value));
        break;
      case "array": {
        parts.push("[");
        todo.push("]");
        for (let i = next.items.length - 1; i >= 0; i--) {
          todo.push(next.items[i]);
          if (i > 0) todo.push(",");
        }
        break;
      }
      case "object": {
        const keys = [...next.members.keys()].sort((a, b) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8")));
        parts.push("{");
        todo.push("}");
        for (let i = keys.length - 1; i >= 0; i--) {
          todo.push(next.members.get(keys[i])!);
          todo.push(encodeString(keys[i]) + ":");
          if (i > 0) todo.push(",");
        }
        break;
      }
    }
  }
  return parts.join("");
}

function encodeString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    switch (c) {
      case 0x22: out += '\\"'; break;
      case 0x5c: out += "\\\\"; break;
      case 0x08: out += "\\b"; break;
      case 0x0c: out += "\\f"; break;
      case 0x0a: out += "\\n"; break;
      case 0x0d: out += "\\r"; break;
      case 0x09: out += "\\t"; break;
      case 0x2028: out += "\\u2028"; break;
      case 0x2029: out += "\\u2029"; break;
      default:
        out += c < 0x20 ? "\\u00" + c.toString(16).padStart(2, "0") : ch;
    }
  }
  return out + '"';
}
