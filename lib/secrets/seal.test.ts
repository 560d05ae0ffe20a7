import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  forgetSecretKey,
  generateSecretKey,
  loadKeyring,
  loadSecretKey,
  nextSecretKeyFile,
  parseSecretKey,
  writeKeyFileAtomically,
} from "./key";
import { seal, unseal } from "./seal";

const key = parseSecretKey(crypto.randomBytes(32).toString("hex"), "test");

afterEach(() => {
  forgetSecretKey();
  delete process.env.CLUPILOT_DATA_DIR;
  delete process.env.CLUPILOT_SECRET_KEY;
  delete process.env.CLUPILOT_PREVIOUS_SECRET_KEYS;
});

describe("sealed secrets", () => {
  it("round-trips and never contains the plaintext", () => {
    const envelope = seal("hunter2-very-secret", key);
    expect(envelope).not.toContain("hunter2");
    expect(envelope.startsWith(`v1.${key.id}.`)).toBe(true);
    expect(unseal(envelope, key)).toBe("hunter2-very-secret");
  });

  it("uses a fresh IV every time", () => {
    expect(seal("same", key)).not.toBe(seal("same", key));
  });

  it("detects tampering", () => {
    const parts = seal("payload", key).split(".");
    const ct = Buffer.from(parts[4]!, "base64url");
    ct[0] = ct[0]! ^ 1;
    parts[4] = ct.toString("base64url");
    expect(() => unseal(parts.join("."), key)).toThrow();
  });

  it("refuses another key with an actionable message", () => {
    const other = parseSecretKey(crypto.randomBytes(32).toString("base64"), "test");
    expect(() => unseal(seal("x", key), other)).toThrow(
      /sealed with key .* but the console runs with key/,
    );
  });

  it("rejects a key of the wrong length", () => {
    expect(() => parseSecretKey("abcd", "CLUPILOT_SECRET_KEY")).toThrow(/32-byte key/);
  });

  it("generates the key file once with mode 0600 and reuses it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-key-"));
    process.env.CLUPILOT_DATA_DIR = dir;
    const first = loadSecretKey();
    const file = path.join(dir, "secret.key");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    forgetSecretKey();
    expect(loadSecretKey().id).toBe(first.id);
    fs.rmSync(dir, { recursive: true });
  });

  it("prefers CLUPILOT_SECRET_KEY", () => {
    process.env.CLUPILOT_SECRET_KEY = crypto.randomBytes(32).toString("hex");
    expect(loadSecretKey().id).toBe(parseSecretKey(process.env.CLUPILOT_SECRET_KEY, "x").id);
  });

  it("opens an envelope with the key it names from the keyring; seals with the current one", () => {
    const old = generateSecretKey();
    process.env.CLUPILOT_SECRET_KEY = key.bytes.toString("hex");
    process.env.CLUPILOT_PREVIOUS_SECRET_KEYS = `${old.bytes.toString("hex")}, `;
    const keyring = loadKeyring();
    expect(keyring.current.id).toBe(key.id);
    expect(unseal(seal("old secret", old))).toBe("old secret");
    expect(seal("new").startsWith(`v1.${key.id}.`)).toBe(true);
    expect(() => unseal(seal("x", generateSecretKey()))).toThrow(/sealed with key/);
  });

  it("a running process finds a key a rotation staged after it loaded its keyring", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-key-"));
    process.env.CLUPILOT_DATA_DIR = dir;
    const first = loadSecretKey();
    const staged = generateSecretKey();
    writeKeyFileAtomically(nextSecretKeyFile(), staged);
    expect(unseal(seal("sealed with the staged key", staged))).toBe("sealed with the staged key");
    expect(loadSecretKey().id).toBe(first.id); // still seals with the current key
    fs.rmSync(dir, { recursive: true });
  });
});
