import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { createDb, type Database } from "@/lib/db/client";
import { createTestDatabase } from "@/test/db";
import { promisify } from "node:util";
import {
  forgetSecretKey,
  generateSecretKey,
  loadKeyring,
  loadSecretKey,
  nextSecretKeyFile,
  parseSecretKey,
  secretKeyFile,
  type SecretKey,
} from "./key";
import { rotateSecrets, type RotationStep } from "./rotate";
import { envelopeKeyId, seal, unseal } from "./seal";
import { sealedColumns } from "./sealed-columns";

const actor = { userId: null, name: "rotation-test" };
const PLAINTEXTS = {
  password: JSON.stringify({ password: "correct horse battery staple" }),
  private_key: JSON.stringify({ privateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n" }),
  api_token: JSON.stringify({ secret: "6f1b2c3d-aaaa-bbbb-cccc-0123456789ab" }),
  console_key: "-----BEGIN OPENSSH PRIVATE KEY-----\nconsole-key-body\n",
  webhook_url: "https://hooks.example.test/services/T000/B000/webhook-path-secret",
  webhook_header: "Bearer webhook-header-secret",
  bmc_password: JSON.stringify({ password: "bmc-password-secret" }),
};

let databases: Array<() => Promise<void>> = [];
let pools: pg.Pool[] = [];
let dataDir = "";

beforeEach(() => {
  delete process.env.CLUPILOT_SECRET_KEY;
  delete process.env.CLUPILOT_PREVIOUS_SECRET_KEYS;
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-rotate-"));
  process.env.CLUPILOT_DATA_DIR = dataDir;
  forgetSecretKey();
});

afterEach(async () => {
  await Promise.all(pools.map((pool) => pool.end()));
  await Promise.all(databases.map((drop) => drop()));
  pools = [];
  databases = [];
  fs.rmSync(dataDir, { recursive: true, force: true });
  delete process.env.CLUPILOT_DATA_DIR;
  forgetSecretKey();
});

afterAll(() => forgetSecretKey());

/** A database with one secret in every sealed column, sealed with the console's current key. */
async function seededDatabase(): Promise<{ db: Database; pool: pg.Pool; key: SecretKey }> {
  const database = await createTestDatabase();
  databases.push(database.drop);
  const { pool, db } = createDb(database.url, 3);
  pools.push(pool);
  const key = loadSecretKey();
  for (const kind of ["password", "private_key", "api_token"] as const) {
    await pool.query("insert into credentials (kind, sealed) values ($1, $2)", [
      kind,
      seal(PLAINTEXTS[kind], key),
    ]);
  }
  await pool.query(
    `insert into console_keys (public_key, fingerprint, sealed_private_key, state)
     values ('ssh-ed25519 AAAA test', 'SHA256:test', $1, 'active')`,
    [seal(PLAINTEXTS.console_key, key)],
  );
  await pool.query(
    `insert into notification_targets
       (name, format, sealed_url, url_origin, auth_header_name, sealed_auth_header_value)
     values ('ops chat', 'json', $1, 'https://hooks.example.test', 'Authorization', $2)`,
    [seal(PLAINTEXTS.webhook_url, key), seal(PLAINTEXTS.webhook_header, key)],
  );
  // A host's out-of-band power controller (lib/power-controllers) seals its BMC password.
  const host = await pool.query<{ id: string }>(
    `insert into hosts (name, address, ssh_user, credential_id)
     select 'pve-rotate', '10.0.0.5', 'root', id from credentials limit 1 returning id`,
  );
  await pool.query(
    `insert into power_controllers (host_id, kind, address, port, username, sealed_secret)
     values ($1, 'ipmi', '10.0.1.5', 623, 'console', $2)`,
    [host.rows[0]!.id, seal(PLAINTEXTS.bmc_password, key)],
  );
  return { db, pool, key };
}

/** Every envelope in every sealed column. */
async function envelopes(pool: pg.Pool): Promise<string[]> {
  const all: string[] = [];
  for (const column of sealedColumns()) {
    const { rows } = await pool.query<{ sealed: string }>(
      `select "${column.column}" as sealed from "${column.table}" order by 1`,
    );
    all.push(...rows.map((row) => row.sealed));
  }
  return all;
}

function opened(sealed: string[], key?: SecretKey): string[] {
  return sealed.map((envelope) => (key ? unseal(envelope, key) : unseal(envelope))).sort();
}

const ALL_PLAINTEXTS = Object.values(PLAINTEXTS).sort();

describe("npm run secrets:rotate", () => {
  it("finds every sealed column of the schema", () => {
    expect(sealedColumns().map((column) => `${column.table}.${column.column}`)).toEqual(
      expect.arrayContaining([
        "console_keys.sealed_private_key",
        "credentials.sealed",
        "power_controllers.sealed_secret",
      ]),
    );
  });

  it("re-seals every secret: each opens with the new key and not with the old; the old key is kept 0600", async () => {
    const { db, pool, key: oldKey } = await seededDatabase();
    const newKey = generateSecretKey();
    const report = await rotateSecrets(db, { newKey, actor, settleMs: 0 });

    expect(report.toKeyId).toBe(newKey.id);
    expect(report.resealed).toEqual({
      "console_keys.sealed_private_key": 1,
      "credentials.sealed": 3,
      "notification_targets.sealed_auth_header_value": 1,
      "notification_targets.sealed_url": 1,
      "power_controllers.sealed_secret": 1,
    });
    expect(report.verified).toBe(7);
    const after = await envelopes(pool);
    expect(after.map(envelopeKeyId)).toEqual(after.map(() => newKey.id));
    expect(opened(after, newKey)).toEqual(ALL_PLAINTEXTS);
    for (const envelope of after) expect(() => unseal(envelope, oldKey)).toThrow(/sealed with key/);

    // The console's key file is the new key; the old one waits in a 0600 backup.
    expect(parseSecretKey(fs.readFileSync(secretKeyFile(), "utf8"), "file").id).toBe(newKey.id);
    expect(fs.existsSync(nextSecretKeyFile())).toBe(false);
    const retired = report.retiredKeyFile!;
    expect(parseSecretKey(fs.readFileSync(retired, "utf8"), "retired").id).toBe(oldKey.id);
    expect(fs.statSync(retired).mode & 0o777).toBe(0o600);
    expect(fs.statSync(secretKeyFile()).mode & 0o777).toBe(0o600);

    // A restarted console seals with the new key.
    forgetSecretKey();
    expect(loadSecretKey().id).toBe(newKey.id);

    const audit = await pool.query(
      "select actor_name, target, outcome from audit_log where action = 'secrets.rotate'",
    );
    expect(audit.rows).toEqual([
      { actor_name: "rotation-test", target: `secret-key:${newKey.id}`, outcome: "success" },
    ]);
  });

  const steps: RotationStep[] = ["staged", "resealed", "backed-up", "switched"];
  for (const crashAt of steps) {
    it(`a crash after "${crashAt}" leaves every secret readable, and running again finishes the rotation`, async () => {
      const { db, pool } = await seededDatabase();
      const newKey = generateSecretKey();
      await expect(
        rotateSecrets(db, {
          newKey,
          actor,
          settleMs: 0,
          afterStep: (step) => {
            if (step === crashAt) throw new Error(`simulated crash after ${step}`);
          },
        }),
      ).rejects.toThrow(/simulated crash/);

      // A console (re)started now, from whatever the crash left on disk, opens every secret.
      forgetSecretKey();
      expect(opened(await envelopes(pool))).toEqual(ALL_PLAINTEXTS);

      // Running the command again resumes with the staged key rather than making a third.
      forgetSecretKey();
      const report = await rotateSecrets(db, { actor, settleMs: 0 });
      // Before the switch the staged key is finished; after it, a new rotation starts afresh.
      if (crashAt === "switched") expect(report.toKeyId).not.toBe(newKey.id);
      else expect(report.toKeyId).toBe(newKey.id);
      const after = await envelopes(pool);
      const finalKey = loadKeyring().current;
      expect(after.map(envelopeKeyId)).toEqual(after.map(() => finalKey.id));
      expect(opened(after, finalKey)).toEqual(ALL_PLAINTEXTS);
      const outcomes = await pool.query(
        "select outcome from audit_log where action = 'secrets.rotate' order by id",
      );
      expect(outcomes.rows.map((row) => row.outcome)).toEqual(["failure", "success"]);
    });
  }

  it("is all or nothing: an envelope no key opens aborts the rotation with nothing changed", async () => {
    const { db, pool } = await seededDatabase();
    const lost = generateSecretKey();
    await pool.query("insert into credentials (kind, sealed) values ('password', $1)", [
      seal("sealed with a key nobody has", lost),
    ]);
    const before = await envelopes(pool);
    const failure = rotateSecrets(db, { actor, settleMs: 0 });
    await expect(failure).rejects.toThrow(
      new RegExp(
        `credentials\\.sealed of row .* \\(it names key ${lost.id}\\)\\. Nothing was changed`,
      ),
    );
    expect(await envelopes(pool)).toEqual(before);
    // The error says which key, never the envelope or the plaintext.
    await failure.catch((error: Error) => {
      expect(error.message).not.toContain(before[0]!.split(".")[4]!);
    });
  });

  it("a running console keeps working: it opens re-sealed secrets, and what it seals with the old key meanwhile is swept", async () => {
    const { db, pool, key: oldKey } = await seededDatabase();
    loadKeyring(); // the running console's keyring: the old key only
    let newEnvelopeOpened = "";
    const report = await rotateSecrets(db, {
      actor,
      settleMs: 10,
      afterStep: async (step) => {
        if (step !== "resealed") return;
        // The database is re-sealed, the key file not yet switched: the console still opens
        // everything (it finds the staged key), and a secret it seals now uses the old key.
        const { rows } = await pool.query<{ sealed: string }>(
          "select sealed from credentials where kind = 'password'",
        );
        newEnvelopeOpened = unseal(rows[0]!.sealed);
        const straggler = seal(PLAINTEXTS.password);
        expect(envelopeKeyId(straggler)).toBe(oldKey.id);
        await pool.query("insert into credentials (kind, sealed) values ('password', $1)", [
          straggler,
        ]);
      },
    });
    expect(newEnvelopeOpened).toBe(PLAINTEXTS.password);
    expect(report.swept).toBe(1);
    const after = await envelopes(pool);
    expect(after).toHaveLength(ALL_PLAINTEXTS.length + 1); // + the straggler
    expect(new Set(after.map(envelopeKeyId))).toEqual(new Set([report.toKeyId]));
    // And after the switch the same process seals with the new key without a restart.
    expect(envelopeKeyId(seal("x"))).toBe(report.toKeyId);
  });

  it("with CLUPILOT_SECRET_KEY: re-seals to the environment's key, the old one given as previous", async () => {
    const { db, pool, key: oldKey } = await seededDatabase();
    const newKey = generateSecretKey();
    process.env.CLUPILOT_SECRET_KEY = newKey.bytes.toString("hex");
    process.env.CLUPILOT_PREVIOUS_SECRET_KEYS = oldKey.bytes.toString("base64");
    forgetSecretKey();
    await expect(
      rotateSecrets(db, { actor, newKey: generateSecretKey(), settleMs: 0 }),
    ).rejects.toThrow(/cannot switch it/);
    const report = await rotateSecrets(db, { actor, settleMs: 0 });
    expect(report).toMatchObject({ mode: "environment", toKeyId: newKey.id, verified: 7 });
    expect(report.fromKeyIds).toEqual([oldKey.id]);
    expect(opened(await envelopes(pool), newKey)).toEqual(ALL_PLAINTEXTS);
    // The key files are the environment's business here: untouched.
    expect(parseSecretKey(fs.readFileSync(secretKeyFile(), "utf8"), "file").id).toBe(oldKey.id);
    expect(fs.existsSync(nextSecretKeyFile())).toBe(false);
  });

  it("refuses to rotate to the key already in use", async () => {
    const { db } = await seededDatabase();
    await expect(
      rotateSecrets(db, { actor, newKey: loadSecretKey(), settleMs: 0 }),
    ).rejects.toThrow(/already uses/);
  });

  it("the command itself: npm run secrets:rotate against the console's database and key file", async () => {
    const database = await createTestDatabase();
    databases.push(database.drop);
    const { pool } = createDb(database.url, 2);
    pools.push(pool);
    const oldKey = loadSecretKey();
    await pool.query("insert into credentials (kind, sealed) values ('password', $1)", [
      seal(PLAINTEXTS.password, oldKey),
    ]);
    const newKey = generateSecretKey();
    const root = path.resolve(import.meta.dirname, "../..");
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "scripts/secrets-rotate.ts"],
      {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          CLUPILOT_DATA_DIR: dataDir,
          CLUPILOT_NEW_SECRET_KEY: newKey.bytes.toString("hex"),
        },
      },
    );
    expect(stdout).toContain(`Re-sealed 1 secret(s) with key ${newKey.id}`);
    expect(stdout).toContain("open with the new key alone");
    expect(stdout).not.toContain(newKey.bytes.toString("hex"));
    const { rows } = await pool.query<{ sealed: string }>("select sealed from credentials");
    expect(unseal(rows[0]!.sealed, newKey)).toBe(PLAINTEXTS.password);
    forgetSecretKey();
    expect(loadSecretKey().id).toBe(newKey.id);
  });
});
