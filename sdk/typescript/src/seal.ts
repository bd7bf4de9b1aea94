// Sealed result bodies, as the Go SDK's package seal makes them: AES-256-GCM under a keyring whose
// newest key seals and whose every key opens, a random 96-bit nonce, the row's identity as the
// additional data (so a body copied to another row does not open), stored in the ledger's JSON
// column as {"$sealed":{"keyId":"…","box":"<base64 of nonce||ciphertext||tag>"}}. The result hash
// stays over the plaintext. seal/testdata/sealed-json.json holds a body Go sealed, which this SDK's
// tests open.

import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

/** The size of every key: AES-256. */
export const KEY_SIZE = 32;
const NONCE_SIZE = 12;
const TAG_SIZE = 16;

/** One key of a keyring: an ID stored beside every body it seals, never secret, and the secret. */
export interface Key {
  id: string;
  secret: Buffer;
}

/** A keyring that cannot be used: no key, a key of the wrong size, an ID twice, a bad line. */
export class BadKeyringError extends Error {}

/** A sealed body that failed to open: another key, changed, or moved from its row. */
export class SealError extends Error {}

export class Keyring {
  private readonly keys = new Map<string, Buffer>();
  /** The ID new seals carry: the last key given. */
  readonly newestKeyId: string;

  /** A keyring of keys, oldest first: the last one seals. */
  constructor(keys: Key[]) {
    if (keys.length === 0) throw new BadKeyringError("bad keyring: no key; generate one with `replayctl keys keyring new`");
    keys.forEach((k, i) => {
      if (k.id === "" || k.id.length > 64) throw new BadKeyringError(`bad keyring: key ${i + 1}: an ID of 1 to 64 characters is required`);
      if (k.secret.length !== KEY_SIZE) throw new BadKeyringError(`bad keyring: key ${JSON.stringify(k.id)} is ${k.secret.length} bytes, want ${KEY_SIZE} (AES-256)`);
      if (this.keys.has(k.id)) throw new BadKeyringError(`bad keyring: key ID ${JSON.stringify(k.id)} appears twice`);
      this.keys.set(k.id, k.secret);
    });
    this.newestKeyId = keys[keys.length - 1].id;
  }

  /**
   * Reads a keyring file as `replayctl keys keyring new` writes it: one key a line, "ID
   * base64-of-32-bytes", oldest first; blank lines and # comments skipped. Errors name the line,
   * never a secret.
   */
  static parse(text: string): Keyring {
    const keys: Key[] = [];
    text.split("\n").forEach((raw, i) => {
      const line = raw.trim();
      if (line === "" || line.startsWith("#")) return;
      const space = line.indexOf(" ");
      if (space < 0) throw new BadKeyringError(`bad keyring: line ${i + 1}: want "ID base64-key" (see \`replayctl keys keyring new\`)`);
      const id = line.slice(0, space);
      const encoded = line.slice(space + 1).trim();
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 !== 0) {
        throw new BadKeyringError(`bad keyring: line ${i + 1} (key ${JSON.stringify(id)}): the key is not standard base64`);
      }
      keys.push({ id, secret: Buffer.from(encoded, "base64") });
    });
    return new Keyring(keys);
  }

  static fromFile(path: string): Keyring {
    try {
      return Keyring.parse(readFileSync(path, "utf8"));
    } catch (e) {
      throw new BadKeyringError(`keyring ${path}: ${(e as Error).message}`);
    }
  }

  /** Encrypts plaintext under the newest key, bound to context; returns the key ID and nonce||ciphertext||tag. */
  seal(plaintext: Buffer, context: Buffer): { keyId: string; box: Buffer } {
    const nonce = randomBytes(NONCE_SIZE);
    const c = createCipheriv("aes-256-gcm", this.keys.get(this.newestKeyId)!, nonce);
    c.setAAD(context);
    const body = Buffer.concat([c.update(plaintext), c.final()]);
    return { keyId: this.newestKeyId, box: Buffer.concat([nonce, body, c.getAuthTag()]) };
  }

  /** Decrypts a body sealed under keyId for context. */
  open(keyId: string, box: Buffer, context: Buffer): Buffer {
    const secret = this.keys.get(keyId);
    if (!secret) throw new SealError(`sealed with a key this keyring does not hold: key ID ${JSON.stringify(keyId)}`);
    if (box.length < NONCE_SIZE + TAG_SIZE) throw new SealError(`sealed body failed authentication: ${box.length} bytes is shorter than a nonce and a tag`);
    const d = createDecipheriv("aes-256-gcm", secret, box.subarray(0, NONCE_SIZE));
    d.setAAD(context);
    d.setAuthTag(box.subarray(box.length - TAG_SIZE));
    try {
      return Buffer.concat([d.update(box.subarray(NONCE_SIZE, box.length - TAG_SIZE)), d.final()]);
    } catch {
      throw new SealError(`sealed body failed authentication (key ID ${JSON.stringify(keyId)})`);
    }
  }

  /** Seals plain (a JSON document) for context, in the form the ledger's JSON column stores. */
  sealJSON(plain: string, context: Buffer): string {
    const { keyId, box } = this.seal(Buffer.from(plain, "utf8"), context);
    return JSON.stringify({ $sealed: { keyId, box: box.toString("base64") } });
  }

  /** Opens a body sealJSON (or the Go SDK) wrote for context. */
  openJSON(raw: string, context: Buffer): Buffer {
    let s: { $sealed?: { keyId?: unknown; box?: unknown } };
    try {
      s = JSON.parse(raw);
    } catch {
      throw new SealError("sealed body failed authentication: not a sealed body");
    }
    const keyId = s?.$sealed?.keyId;
    const box = s?.$sealed?.box;
    if (typeof keyId !== "string" || keyId === "" || typeof box !== "string") throw new SealError("sealed body failed authentication: not a sealed body");
    return this.open(keyId, Buffer.from(box, "base64"), context);
  }
}

/** Binds a consumer's sealed result body to its ledger row: consumer, event ID and effect version. */
export function resultContext(consumer: string, eventId: string, effectVersion: number): Buffer {
  return Buffer.from(`replayctl.result\u001f${consumer}\u001f${eventId}\u001f${effectVersion}`, "utf8");
}
