import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { auditLog, credentials, events, hosts } from "@/lib/db/schema";
import { unseal } from "@/lib/secrets/seal";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as hostRoute from "./[hostId]/route";
import * as hostsRoute from "./route";

// `POST /api/hosts` with `subscriptionKey` (issue 31, item 6): sealed, never answered back.
registerProcessTestDatabase();
let operator: TestUser;

beforeAll(async () => {
  operator = await createTestUser(getDb(), "operator");
});

const KEY = "pve2c-0123456789";
let counter = 0;
const host = (subscriptionKey: unknown) => ({
  name: `pve-s${++counter}`,
  address: "10.0.0.6",
  sshPort: 22,
  sshUser: "root",
  authMethod: "password",
  password: "correct horse",
  ...(subscriptionKey === undefined ? {} : { subscriptionKey }),
});

async function post(body: unknown) {
  const response = await hostsRoute.POST(
    new Request("http://test/api/hosts", {
      method: "POST",
      headers: operator.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    }),
  );
  return {
    status: response.status,
    body: (await response.json()) as {
      hostId?: string;
      fieldErrors?: Record<string, string[]>;
    },
  };
}

async function answers(hostId: string): Promise<string> {
  const one = await hostRoute.GET(
    new Request(`http://test/api/hosts/${hostId}`, { headers: operator.authHeaders() }),
    { params: Promise.resolve({ hostId }) },
  );
  expect(one.status).toBe(200);
  const list = await hostsRoute.GET(
    new Request("http://test/api/hosts?limit=200", { headers: operator.authHeaders() }),
  );
  expect(list.status).toBe(200);
  return `${await one.text()}\n${await list.text()}`;
}

async function patch(hostId: string, body: unknown) {
  const response = await hostRoute.PATCH(
    new Request(`http://test/api/hosts/${hostId}`, {
      method: "PATCH",
      headers: operator.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(body),
    }),
    { params: Promise.resolve({ hostId }) },
  );
  return {
    status: response.status,
    body: (await response.json()) as { fieldErrors?: Record<string, string[]> },
  };
}

describe("POST /api/hosts with a subscription key", () => {
  it("seals the key; the API answers hasSubscriptionKey, never the key; no event or audit entry holds it", async () => {
    const created = await post(host(` ${KEY} `));
    expect(created.status).toBe(201);
    const hostId = created.body.hostId!;
    const [row] = await getDb().select().from(hosts).where(eq(hosts.id, hostId));
    expect(row!.subscriptionKeyCredentialId).not.toBeNull();
    const [credential] = await getDb()
      .select()
      .from(credentials)
      .where(eq(credentials.id, row!.subscriptionKeyCredentialId!));
    expect(credential!.kind).toBe("subscription_key");
    expect(credential!.sealed).not.toContain(KEY);
    expect(unseal(credential!.sealed)).toBe(KEY);

    const text = await answers(hostId);
    expect(text).not.toContain(KEY);
    expect(JSON.parse(text.split("\n")[0]!)).toMatchObject({
      proxmox: { hasSubscriptionKey: true },
    });
    const stored = JSON.stringify([
      await getDb().select().from(events).where(eq(events.hostId, hostId)),
      await getDb().select().from(auditLog),
    ]);
    expect(stored).toContain("with a subscription key");
    expect(stored).not.toContain(KEY);
  });

  it("without a key (absent or blank) nothing is stored and hasSubscriptionKey is false", async () => {
    for (const key of [undefined, "", "   "]) {
      const created = await post(host(key));
      expect(created.status).toBe(201);
      const [row] = await getDb().select().from(hosts).where(eq(hosts.id, created.body.hostId!));
      expect(row!.subscriptionKeyCredentialId).toBeNull();
      expect(JSON.parse((await answers(created.body.hostId!)).split("\n")[0]!)).toMatchObject({
        proxmox: { hasSubscriptionKey: false },
      });
    }
  });

  it("answers hostile or wrong keys with a field error on subscriptionKey, never a 500, and stores no host", async () => {
    const before = (await getDb().select({ id: hosts.id }).from(hosts)).length;
    for (const key of [
      "pve3c-0123456789",
      "pve2x-0123456789",
      "pve2c-0123456789; reboot",
      "$(reboot)",
      "pve2c-0123456789\nreboot",
      "x".repeat(100_000),
      7,
      { $ne: 1 },
      ["pve2c-0123456789"],
      true,
    ]) {
      const response = await post(host(key));
      expect(response.status, JSON.stringify(key).slice(0, 40)).toBe(400);
      expect(Object.keys(response.body.fieldErrors ?? {})).toEqual(["subscriptionKey"]);
    }
    expect((await getDb().select({ id: hosts.id }).from(hosts)).length).toBe(before);
  });

  it("PATCH answers a hostile new key with a field error before anything is tried, and keeps the stored key", async () => {
    const created = await post(host(KEY));
    const hostId = created.body.hostId!;
    const [before] = await getDb().select().from(hosts).where(eq(hosts.id, hostId));
    for (const key of ["pve2c-0123456789 --force", "$(reboot)", 7, { $ne: 1 }]) {
      const response = await patch(hostId, {
        address: "10.0.0.6",
        sshPort: 22,
        sshUser: "root",
        authMethod: "keep",
        subscriptionKey: key,
      });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body.fieldErrors ?? {})).toEqual(["subscriptionKey"]);
    }
    const [after] = await getDb().select().from(hosts).where(eq(hosts.id, hostId));
    expect(after!.subscriptionKeyCredentialId).toBe(before!.subscriptionKeyCredentialId);
  });
});
