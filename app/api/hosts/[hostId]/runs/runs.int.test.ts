import { and, eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { events, runs } from "@/lib/db/schema";
import { listHosts } from "@/lib/hosts/list-hosts";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import * as hostsRoute from "../../route";
import * as runsRoute from "./route";

// The route handler uses the process-wide database from DATABASE_URL, as in production. No
// worker runs here: a started run stays `running` until the test ends it in the database.
registerProcessTestDatabase();
// Every call is made as a signed-in operator through a real API token.
let signedIn: TestUser;
const auth = (extra?: Record<string, string>) => signedIn.authHeaders(extra);

beforeAll(async () => {
  signedIn = await createTestUser(getDb(), "operator");
});

const params = (hostId: string) => ({ params: Promise.resolve({ hostId }) });
const reonboard = (hostId: string) =>
  runsRoute.POST(new Request("http://test", { method: "POST", headers: auth() }), params(hostId));
const unknownId = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";

async function addHost(name: string): Promise<{ hostId: string; runId: string }> {
  const response = await hostsRoute.POST(
    new Request("http://test/api/hosts", {
      method: "POST",
      headers: auth({ "content-type": "application/json" }),
      body: JSON.stringify({
        name,
        address: "10.0.0.5",
        sshPort: 22,
        sshUser: "root",
        authMethod: "password",
        password: "correct horse",
      }),
    }),
  );
  expect(response.status).toBe(201);
  return (await response.json()) as { hostId: string; runId: string };
}

async function endRun(runId: string, status: "failed" | "succeeded") {
  await getDb()
    .update(runs)
    .set({
      status,
      finishedAt: new Date(),
      nextTickAt: null,
      ...(status === "failed"
        ? { failedStep: "CheckOperatingSystem", failureReason: "found Debian 12" }
        : {}),
    })
    .where(eq(runs.id, runId));
}

describe("POST /api/hosts/[hostId]/runs", () => {
  it("answers 400 for a malformed id and 404 for an unknown host, never 500", async () => {
    const malformed = await reonboard("x'; drop");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as { fieldErrors: object }).fieldErrors).toHaveProperty(
      "hostId",
    );
    const unknown = await reonboard(unknownId);
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: string }).error).toContain(unknownId);
  });

  it("refuses with 409 while the latest run is running, naming the step", async () => {
    const { hostId } = await addHost("pve-running");
    const response = await reonboard(hostId);
    expect(response.status).toBe(409);
    const body = (await response.json()) as { error: string };
    expect(body.error).toContain("pve-running");
    expect(body.error).toContain("ConnectHost");
    // Nothing was started: still one run.
    expect(await getDb().select().from(runs).where(eq(runs.hostId, hostId))).toHaveLength(1);
  });

  it("starts a new run for a failed host (201 { runId }) at the first step, with its event; a second request is then 409", async () => {
    const { hostId, runId: first } = await addHost("pve-failed");
    await endRun(first, "failed");
    const response = await reonboard(hostId);
    expect(response.status).toBe(201);
    const { runId } = (await response.json()) as { runId: string };
    expect(runId).not.toBe(first);

    const [host] = await listHosts(getDb(), { hostId });
    expect(host?.state).toBe("onboarding");
    expect(host?.run?.id).toBe(runId);
    expect(host?.run?.currentStep).toBe("ConnectHost");
    const [event] = await getDb()
      .select()
      .from(events)
      .where(and(eq(events.runId, runId), eq(events.kind, "host.reonboarded")));
    expect(event?.actor).toBe(signedIn.user.name);
    expect(event?.message).toContain("failed");
    // The old run stays as it was: its history remains readable.
    const [old] = await getDb().select().from(runs).where(eq(runs.id, first));
    expect(old?.status).toBe("failed");

    expect((await reonboard(hostId)).status).toBe(409);
  });

  it("starts a new run for an active host; two concurrent requests start exactly one", async () => {
    const { hostId, runId: first } = await addHost("pve-active");
    await endRun(first, "succeeded");
    const answers = await Promise.all([reonboard(hostId), reonboard(hostId)]);
    expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
    const all = await getDb().select().from(runs).where(eq(runs.hostId, hostId));
    expect(all.filter((run) => run.status === "running")).toHaveLength(1);
    expect(all).toHaveLength(2);
  });
});
