import { eq } from "drizzle-orm";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { generateClientKey, type LabNode } from "@/lab";
import type { Database } from "@/lib/db/client";
import {
  consoleKeyCredentials,
  consoleKeyRotationHosts,
  consoleKeyRotations,
  consoleKeys,
} from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import type { SshAuth } from "@/lib/ssh";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { checkOperatingSystem } from "@/lib/steps/onboarding/check-operating-system";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { prepareHostname } from "@/lib/steps/onboarding/prepare-hostname";
import { loadAuth } from "@/lib/steps/onboarding/services";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, runRow, settled } from "@/test/runs";

import { createHostCredential } from "@/lib/host-access/host-credential";
import { publicKeyFingerprint } from "@/lib/host-access/console-key-pair";
import { createRotateConsoleKeyPipeline } from "./rotation/pipeline";
import { startRotation } from "./rotation/start-rotation";
import { rotationStatus } from "./rotation/status";
import {
  activeConsoleKey,
  consoleKeyPrivate,
  ensureConsoleKey,
} from "@/lib/host-access/console-key-store";
import { labNodeAccepts } from "@/test/lab-login";
import { insertPinnedLabHost } from "@/test/pinned-lab-host";

// Onboarding's first steps are enough to prove the console's key is what logs in: ConnectHost
// pins the host key and checks root, CheckOperatingSystem and PrepareHostname run commands.
const config = onboardingConfigFromEnv({});
const onboard = createOnboardHostPipeline(config, {
  steps: [connectHost, checkOperatingSystem(config), prepareHostname],
});
/** Host ids whose switch "crashes" once, right after the new key was recorded for them. */
const crashAfterProven = new Set<string>();
const authorizedKeysAtCrash = new Map<string, string>();
const nodesByHost = new Map<string, LabNode>();
const rotate = createRotateConsoleKeyPipeline({
  async afterProven(hostId) {
    if (!crashAfterProven.delete(hostId)) return;
    const node = nodesByHost.get(hostId);
    if (node) authorizedKeysAtCrash.set(hostId, await readFile(node.authorizedKeysPath, "utf8"));
    throw new Error("simulated crash after the new key was proven");
  },
});

let harness: StepHarness;
let db: Database;

beforeAll(async () => {
  harness = await startStepHarness({
    pipelines: { [onboard.name]: onboard, [rotate.name]: rotate },
  });
  db = harness.db;
});
afterAll(() => harness.stop());

const keyAuth = (privateKey: string): SshAuth => ({ kind: "private_key", privateKey });

/** Whether the node lets the given key in (a real SSH login, host key pinned). */
const accepts = (node: LabNode, privateKey: string) => labNodeAccepts(node, keyAuth(privateKey));

const linesOf = async (node: LabNode) =>
  (await readFile(node.authorizedKeysPath, "utf8")).split("\n").filter((l) => l !== "");

/** A host on the console's key, already onboarded (its host key pinned). */
async function addPinnedHost(name: string, node: LabNode): Promise<string> {
  const credentialId = await db.transaction((tx) =>
    createHostCredential(tx, { authMethod: "console_key" }),
  );
  const hostId = await insertPinnedLabHost(db, node, { name, credentialId });
  nodesByHost.set(hostId, node);
  return hostId;
}

async function keyOfHost(hostId: string): Promise<string> {
  const host = await hostRow(db, hostId);
  const [row] = await db
    .select()
    .from(consoleKeyCredentials)
    .where(eq(consoleKeyCredentials.credentialId, host.credentialId));
  return row!.consoleKeyId;
}

describe("the console's key", () => {
  it("is created once even when several processes ask at once; the private key is sealed", async () => {
    const keys = await Promise.all(Array.from({ length: 6 }, () => ensureConsoleKey(db)));
    expect(new Set(keys.map((k) => k.id)).size).toBe(1);
    const rows = await db.select().from(consoleKeys);
    expect(rows).toHaveLength(1);
    const key = rows[0]!;
    expect(key.state).toBe("active");
    expect(key.publicKey).toMatch(
      new RegExp(`^ssh-ed25519 AAAA\\S+ clupilot-console@${key.id.slice(0, 8)}$`),
    );
    expect(publicKeyFingerprint(key.publicKey)).toBe(key.fingerprint);
    expect(key.sealedPrivateKey).not.toContain("PRIVATE KEY");
    expect(await consoleKeyPrivate(db, key.id)).toContain("BEGIN OPENSSH PRIVATE KEY");
  });

  it("onboards a lab node that accepts only the console's key (password logins off)", async () => {
    const key = await ensureConsoleKey(db);
    const node = await harness.lab({
      authorizedKeys: [key.publicKey],
      passwordAuthentication: false,
    });
    const { hostId, runId } = await createHost(
      db,
      {
        name: "only-console-key",
        address: node.ssh.host,
        sshPort: node.ssh.port,
        apiPort: 8006,
        sshUser: node.ssh.username,
        authMethod: "console_key",
        consoleKeyId: key.id,
      },
      "test",
    );
    const run = await settled(db, runId, 60_000);
    expect(run).toMatchObject({ status: "succeeded", currentStep: "PrepareHostname" });
    expect((await hostRow(db, hostId)).hostKeySha256).toBe(node.ssh.hostKeySha256);
    expect(node.authAttempts.some((a) => a.method === "password")).toBe(false);
    expect(
      node.authAttempts.filter((a) => a.method === "publickey" && a.accepted && a.signed).length,
    ).toBeGreaterThan(0);
    // Nothing but the console's key could have logged in: a stranger's key and the password fail.
    expect(await accepts(node, generateClientKey("stranger").privateKey)).toBe(false);
  });

  it("refuses a host whose form showed a key that is no longer the active one", async () => {
    const stale = "00000000-0000-4000-8000-000000000000";
    await expect(
      db.transaction((tx) =>
        createHostCredential(tx, { authMethod: "console_key", consoleKeyId: stale }),
      ),
    ).rejects.toMatchObject({ code: "conflict", fieldErrors: { authMethod: expect.any(Array) } });
  });
});

describe("key rotation over 5 lab nodes", () => {
  const nodes: LabNode[] = [];
  const hostIds: string[] = [];

  beforeAll(async () => {
    const key = (await activeConsoleKey(db))!;
    for (let i = 0; i < 5; i += 1) {
      const node = await harness.lab({
        name: `rot${i}`,
        authorizedKeys: [generateClientKey("operator@laptop").publicKey, key.publicKey],
        passwordAuthentication: false,
      });
      nodes.push(node);
      hostIds.push(await addPinnedHost(`rot${i}`, node));
    }
  });

  it("moves 4 nodes to the new key and removes the old one there; the node refusing the new key keeps the old one and is reported", async () => {
    const oldKey = (await activeConsoleKey(db))!;
    const oldPrivate = await consoleKeyPrivate(db, oldKey.id);
    const started = await startRotation(db, { name: "test" }, rotate);
    // The rotation covers the earlier onboarded host too: 6 hosts on the console's key.
    expect(started.hostCount).toBe(6);
    const newKey = (await activeConsoleKey(db))!;
    expect(newKey.id).toBe(started.toKeyId);
    // rot2 will refuse the new key even though it is added to its authorized_keys.
    nodes[2]!.faults.refusePublicKeys = [newKey.fingerprint];
    const newPrivate = await consoleKeyPrivate(db, newKey.id);

    // A second rotation cannot start while this one runs.
    await expect(startRotation(db, { name: "test" }, rotate)).rejects.toMatchObject({
      code: "conflict",
    });

    const run = await settled(db, started.runId, 120_000);
    expect(run.status).toBe("succeeded");

    const status = await rotationStatus(db, started.rotationId);
    const outcomes = Object.fromEntries(status!.hosts.map((h) => [h.hostName, h.outcome]));
    expect(outcomes).toEqual({
      "only-console-key": "switched",
      rot0: "switched",
      rot1: "switched",
      rot2: "new_key_refused",
      rot3: "switched",
      rot4: "switched",
    });
    expect(status!.hosts.find((h) => h.hostName === "rot2")!.detail).toMatch(
      /refused the new key.*keeps the old key/,
    );

    for (const [i, node] of nodes.entries()) {
      const lines = await linesOf(node);
      expect(lines).toContain(newKey.publicKey); // appended everywhere it could log in
      if (i === 2) {
        expect(lines).toContain(oldKey.publicKey);
        expect(await accepts(node, oldPrivate)).toBe(true);
        expect(await keyOfHost(hostIds[i]!)).toBe(oldKey.id);
        // The console keeps logging in to it with the old key.
        expect(await loadAuth(db, (await hostRow(db, hostIds[i]!)).credentialId)).toEqual(
          keyAuth(oldPrivate),
        );
      } else {
        expect(lines).not.toContain(oldKey.publicKey);
        expect(lines).toHaveLength(2); // the operator's own key is untouched
        expect(await accepts(node, newPrivate)).toBe(true);
        expect(await accepts(node, oldPrivate)).toBe(false);
        expect(await keyOfHost(hostIds[i]!)).toBe(newKey.id);
      }
    }
    // rot2 still depends on the old key: it is retiring, not retired.
    const [old] = await db.select().from(consoleKeys).where(eq(consoleKeys.id, oldKey.id));
    expect(old!.state).toBe("retiring");
    const [rotation] = await db
      .select()
      .from(consoleKeyRotations)
      .where(eq(consoleKeyRotations.id, started.rotationId));
    expect(rotation!.finishedAt).not.toBeNull();
  });

  it("a crash right after a host was proven resumes there; every host stays reachable; old keys retire once unused", async () => {
    nodes[2]!.faults.refusePublicKeys = [];
    const keysBefore = await db.select().from(consoleKeys);
    crashAfterProven.add(hostIds[1]!);
    const started = await startRotation(db, { name: "test" }, rotate);
    const newKey = (await activeConsoleKey(db))!;
    const run = await settled(db, started.runId, 120_000);
    expect(run.status).toBe("succeeded");
    // The crashed visit was a transient error the engine retried.
    expect(authorizedKeysAtCrash.has(hostIds[1]!)).toBe(true);
    // At the moment of the crash the host accepted both the key it was on and the new one.
    const atCrash = authorizedKeysAtCrash.get(hostIds[1]!)!.split("\n");
    expect(atCrash).toContain(newKey.publicKey);
    expect(atCrash.filter((line) => line.includes("clupilot-console@")).length).toBe(2);

    const outcomes = await db
      .select()
      .from(consoleKeyRotationHosts)
      .where(eq(consoleKeyRotationHosts.rotationId, started.rotationId));
    expect(outcomes.map((o) => o.outcome)).toEqual(Array(6).fill("switched"));
    const newPrivate = await consoleKeyPrivate(db, newKey.id);
    for (const [i, node] of nodes.entries()) {
      const consoleLines = (await linesOf(node)).filter((l) => l.includes("clupilot-console@"));
      expect(consoleLines).toEqual([newKey.publicKey]);
      expect(await accepts(node, newPrivate)).toBe(true);
      for (const older of keysBefore) {
        expect(await accepts(node, await consoleKeyPrivate(db, older.id))).toBe(false);
      }
      expect(await keyOfHost(hostIds[i]!)).toBe(newKey.id);
    }
    // No host depends on any older key now (rot2 moved from the first key, two rotations back).
    const states = await db.select().from(consoleKeys);
    expect(states.filter((k) => k.state === "active").map((k) => k.id)).toEqual([newKey.id]);
    expect(states.filter((k) => k.id !== newKey.id).every((k) => k.state === "retired")).toBe(true);
    expect((await runRow(db, started.runId)).failureReason).toBeNull();
  });

  it("two host entries for one machine both end on the new key (the second proves it by logging in)", async () => {
    const twin = await addPinnedHost("a-twin-of-rot0", nodes[0]!);
    const started = await startRotation(db, { name: "test" }, rotate);
    const run = await settled(db, started.runId, 120_000);
    expect(run.status).toBe("succeeded");
    const status = await rotationStatus(db, started.rotationId);
    const outcomeOf = (name: string) => status!.hosts.find((h) => h.hostName === name)?.outcome;
    expect(outcomeOf("a-twin-of-rot0")).toBe("switched");
    expect(outcomeOf("rot0")).toBe("switched");
    expect(await keyOfHost(twin)).toBe(started.toKeyId);
    expect(await keyOfHost(hostIds[0]!)).toBe(started.toKeyId);
    const newKey = (await activeConsoleKey(db))!;
    const consoleLines = (await linesOf(nodes[0]!)).filter((l) => l.includes("clupilot-console@"));
    expect(consoleLines).toEqual([newKey.publicKey]);
  });
});
