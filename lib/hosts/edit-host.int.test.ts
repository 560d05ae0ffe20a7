import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { desc, eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, events, hosts } from "@/lib/db/schema";
import { definePipeline } from "@/lib/pipeline/step";
import { unseal } from "@/lib/secrets/seal";
import { ensureConsoleKey } from "@/lib/host-access/console-key-store";
import { createOnboardHostPipeline } from "@/lib/steps/onboarding";
import { onboardingConfigFromEnv } from "@/lib/steps/onboarding/config";
import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { generateClientKey, type LabNode } from "@/lab";
import { startStepHarness, type StepHarness } from "@/test/fixtures/step-harness";
import { hostRow, settled, startTestRun } from "@/test/runs";
import { clearHostPin } from "./clear-host-pin";
import { createHost } from "./create-host";
import { editHost, testHostConnection, type TEditHost } from "./edit-host";
import { reonboardHost } from "./reonboard-host";
import { refusal } from "@/test/refusal";

// ConnectHost alone under the onboarding pipeline's name: what createHost and reonboardHost
// start is then a real first contact (and pin) without the rest of the onboarding.
const onboard = createOnboardHostPipeline(onboardingConfigFromEnv({}), { steps: [connectHost] });
// Known to nobody: a run of it stays "running", as a host mid-onboarding does.
const neverRuns = definePipeline({
  name: "test-never-ticks",
  steps: [connectHost],
  services: () => {
    throw new Error("not run in this test");
  },
});

let db: Database;
let harness: StepHarness;

beforeAll(async () => {
  harness = await startStepHarness({ pipelines: { [onboard.name]: onboard } });
  db = harness.db;
});
afterAll(() => harness.stop());

let counter = 0;
/** A lab node added through createHost, its first run (ConnectHost) done and the key pinned. */
async function pinnedHost(node: LabNode) {
  const { hostId, runId } = await createHost(
    db,
    {
      name: `edit-${++counter}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: 8006,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
    "test",
  );
  expect((await settled(db, runId)).status).toBe("succeeded");
  return hostId;
}

const settings = (node: LabNode, patch: Partial<TEditHost> = {}): TEditHost => ({
  address: node.ssh.host,
  sshPort: node.ssh.port,
  sshUser: node.ssh.username,
  authMethod: "keep",
  ...patch,
});

async function storedSecret(hostId: string) {
  const host = await hostRow(db, hostId);
  const [credential] = await db
    .select()
    .from(credentials)
    .where(eq(credentials.id, host.credentialId));
  return { credentialId: host.credentialId, secret: unseal(credential!.sealed) };
}

describe("editing a host: settings are saved only after a live connection test", () => {
  it("an edit with a wrong password is refused by the connection test on the password field; nothing is saved", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    const before = await hostRow(db, hostId);
    const secretBefore = await storedSecret(hostId);

    const error = await refusal(
      editHost(db, {
        hostId,
        actor: "test",
        edit: settings(node, { authMethod: "password", password: "not-the-password" }),
      }),
    );
    expect(error.code).toBe("invalid_input");
    expect(error.fieldErrors?.password?.[0]).toMatch(/refused this password/);
    expect(error.message).toMatch(/authentication refused .*Nothing was saved/);
    expect(error.message).not.toContain("not-the-password");

    expect(await hostRow(db, hostId)).toEqual(before);
    expect(await storedSecret(hostId)).toEqual(secretBefore);
    expect(await db.select().from(credentials)).not.toContainEqual(
      expect.objectContaining({ sealed: expect.stringContaining("not-the-password") }),
    );
  });

  it("a new private key that the host accepts replaces the password; the old secret is deleted; the event names what changed, never the secret", async () => {
    const key = generateClientKey();
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    await node.authorizeKey(key.publicKey);
    const { credentialId: oldCredential } = await storedSecret(hostId);

    const result = await editHost(db, {
      hostId,
      actor: "alice",
      edit: settings(node, { authMethod: "private_key", privateKey: key.privateKey }),
    });
    expect(result).toMatchObject({
      pinned: false,
      changes: ["new SSH private key"],
      test: { hostKeySha256: node.ssh.hostKeySha256, privilege: "root" },
    });
    const stored = await storedSecret(hostId);
    expect(stored.credentialId).not.toBe(oldCredential);
    expect(JSON.parse(stored.secret).privateKey.trim()).toBe(key.privateKey.trim());
    expect(await db.select().from(credentials).where(eq(credentials.id, oldCredential))).toEqual(
      [],
    );
    const [event] = await db
      .select()
      .from(events)
      .where(eq(events.hostId, hostId))
      .orderBy(desc(events.id))
      .limit(1);
    expect(event).toMatchObject({ kind: "host.edited", actor: "alice" });
    expect(event!.message).toContain("new SSH private key");
    expect(event!.message).not.toContain("PRIVATE KEY");
  });

  it("switching to the console's key is tested with that key first: refused until it is installed, then saved", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    const key = await ensureConsoleKey(db);
    const toConsoleKey = settings(node, { authMethod: "console_key", consoleKeyId: key.id });

    const refused = await refusal(editHost(db, { hostId, actor: "test", edit: toConsoleKey }));
    expect(refused.fieldErrors?.authMethod?.[0]).toMatch(/refused the console's key: install it/);
    expect((await hostRow(db, hostId)).credentialId).toBe(
      (await storedSecret(hostId)).credentialId,
    );

    node.authorizeKey(key.publicKey);
    const saved = await editHost(db, { hostId, actor: "test", edit: toConsoleKey });
    expect(saved.changes).toEqual(["now logs in with the console's key"]);
    const [credential] = await db
      .select()
      .from(credentials)
      .where(eq(credentials.id, (await hostRow(db, hostId)).credentialId));
    expect(credential!.kind).toBe("console_key");
    // "Keep" now logs in with the console's key.
    expect(await testHostConnection(db, { hostId, edit: settings(node) })).toMatchObject({
      privilege: "root",
    });
  });

  it("a changed host key refuses the edit with what it can mean and a pointer to Clear pin; no credential is sent, nothing saved", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    const before = await hostRow(db, hostId);
    const pinned = node.ssh.hostKeySha256;
    await node.rotateHostKey();
    const attempts = node.authAttempts.length;

    const error = await refusal(
      editHost(db, {
        hostId,
        actor: "test",
        edit: settings(node, { authMethod: "password", password: node.ssh.password }),
      }),
    );
    expect(error.code).toBe("conflict");
    expect(error.message).toContain(`presented host key ${node.ssh.hostKeySha256}`);
    expect(error.message).toContain(`but ${pinned} is pinned`);
    expect(error.message).toMatch(/reinstalled.*intercepting.*"Clear pin"/);
    expect(node.authAttempts.length).toBe(attempts);
    expect(await hostRow(db, hostId)).toEqual(before);
  });

  it("an edit while a run is running is refused with 409 and what to do; nothing is tested or saved", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    await startTestRun(db, neverRuns, hostId);
    const before = await hostRow(db, hostId);
    const attempts = node.authAttempts.length;

    const error = await refusal(
      editHost(db, { hostId, actor: "test", edit: settings(node, { sshPort: 2222 }) }),
    );
    expect(error.code).toBe("conflict");
    expect(error.httpStatus).toBe(409);
    expect(error.message).toMatch(/run in progress .*Wait for it to end, or abort it/);
    expect(node.authAttempts.length).toBe(attempts);
    expect(await hostRow(db, hostId)).toEqual(before);
  });

  it("an unreachable new port is refused on address and port; nothing saved", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    node.faults.refuseConnections = true;
    const error = await refusal(editHost(db, { hostId, actor: "test", edit: settings(node) }));
    expect(error.code).toBe("unavailable");
    expect(Object.keys(error.fieldErrors ?? {}).sort()).toEqual(["address", "sshPort"]);
    expect((await hostRow(db, hostId)).sshPort).toBe(node.ssh.port);
  });
});

describe("clearing the pin after a reinstall", () => {
  it("clearing the pin, then connecting to a re-keyed lab node pins the new key (edit's test, then a re-onboard run)", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    const oldKey = node.ssh.hostKeySha256;
    const newKey = await node.rotateHostKey();
    expect(newKey).not.toBe(oldKey);

    // A stale fingerprint (not the pinned one) clears nothing.
    const stale = await refusal(clearHostPin(db, { hostId, actor: "test", fingerprint: newKey }));
    expect(stale.fieldErrors?.fingerprint).toBeDefined();
    expect((await hostRow(db, hostId)).hostKeySha256).toBe(oldKey);

    expect(await clearHostPin(db, { hostId, actor: "alice", fingerprint: oldKey })).toEqual({
      hostId,
      cleared: oldKey,
    });
    expect(await hostRow(db, hostId)).toMatchObject({ hostKeySha256: null, hostKeyPinnedAt: null });

    // "Test connection" reports the offered key but pins nothing.
    expect(await testHostConnection(db, { hostId, edit: settings(node) })).toEqual({
      hostKeySha256: newKey,
      privilege: "root",
    });
    expect((await hostRow(db, hostId)).hostKeySha256).toBeNull();

    // Saving the (tested) settings is the first contact: it pins the new key.
    const saved = await editHost(db, { hostId, actor: "alice", edit: settings(node) });
    expect(saved).toMatchObject({ pinned: true, test: { hostKeySha256: newKey } });
    expect((await hostRow(db, hostId)).hostKeySha256).toBe(newKey);

    // And a run after another clear pins it through ConnectHost's first contact.
    await clearHostPin(db, { hostId, actor: "alice", fingerprint: newKey });
    const { runId } = await reonboardHost(db, { hostId, actor: "alice" });
    expect((await settled(db, runId)).status).toBe("succeeded");
    expect((await hostRow(db, hostId)).hostKeySha256).toBe(newKey);

    const kinds = (
      await db.select().from(events).where(eq(events.hostId, hostId)).orderBy(events.id)
    ).map((e) => e.kind);
    expect(kinds.filter((k) => k === "host.pin_cleared")).toHaveLength(2);
    expect(kinds).toContain("host.key_pinned");
  });

  it("clearing is refused for a host without a pin and while a run is running", async () => {
    const node = await harness.lab();
    const hostId = await pinnedHost(node);
    const pin = node.ssh.hostKeySha256;
    await startTestRun(db, neverRuns, hostId);
    const busy = await refusal(clearHostPin(db, { hostId, actor: "t", fingerprint: pin }));
    expect(busy.code).toBe("conflict");
    expect((await hostRow(db, hostId)).hostKeySha256).toBe(pin);

    const unpinnedNode = await harness.lab();
    const [other] = await db
      .insert(hosts)
      .values({
        name: `edit-unpinned-${++counter}`,
        address: unpinnedNode.ssh.host,
        sshPort: unpinnedNode.ssh.port,
        sshUser: "root",
        credentialId: (await hostRow(db, hostId)).credentialId,
      })
      .returning({ id: hosts.id });
    const nothing = await refusal(
      clearHostPin(db, { hostId: other!.id, actor: "t", fingerprint: pin }),
    );
    expect(nothing.message).toMatch(/has no pinned host key/);
  });
});
