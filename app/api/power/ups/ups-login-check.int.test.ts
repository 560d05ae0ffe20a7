import { sql } from "drizzle-orm";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  startUpsdPeer,
  UPSD_PEER_NO_UPSMON,
  UPSD_PEER_USER,
  type UpsdPeer,
} from "@/lab/ups/upsd-peer";
import { createUpsDeviceAction } from "@/lib/actions/power/create-ups-device";
import { updateUpsDeviceAction } from "@/lib/actions/power/update-ups-device";
import { getDb } from "@/lib/db/client";
import { freePort } from "@/lib/db/embedded-postgres";
import { createTestUser, type TestUser } from "@/test/auth";
import { actAs } from "@/test/next-headers";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as upsDeviceRoute from "./[upsId]/route";
import * as upsRoute from "./route";

/*
 * Issue 29, item 16: a NUT user without the `upsmon` right was saved (201) and showed up only
 * later, as an alarm. Saving a NUT UPS now logs in first, as the monitor will, against Debian's
 * real upsd (NUT 2.8) here: connect, USERNAME, PASSWORD, LOGIN <ups>, LOGOUT.
 */

vi.mock("next/headers", () => import("@/test/next-headers"));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined, revalidateTag: () => undefined }));

registerProcessTestDatabase();
let admin: TestUser;
let peer: UpsdPeer;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  peer = await startUpsdPeer({
    ups: [{ name: "rack1", vars: { "ups.status": "OL", "battery.charge": "100" } }],
  });
}, 60_000);

afterAll(async () => {
  await peer?.stop();
});

type ErrorBody = { error: string; fieldErrors: Record<string, string[]> };
let counter = 0;

const nut = (over: Record<string, unknown> = {}) => ({
  type: "nut",
  host: peer.host,
  port: peer.port,
  upsName: "rack1",
  username: UPSD_PEER_USER.username,
  password: UPSD_PEER_USER.password,
  ...over,
});

async function create(source: Record<string, unknown>) {
  const response = await upsRoute.POST(
    new Request("http://test/api/power/ups", {
      method: "POST",
      headers: admin.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify({ name: `login-check-${++counter}`, source }),
    }),
  );
  return { status: response.status, body: (await response.json()) as ErrorBody };
}

async function update(id: string, change: Record<string, unknown>) {
  const response = await upsDeviceRoute.PATCH(
    new Request(`http://test/api/power/ups/${id}`, {
      method: "PATCH",
      headers: admin.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify(change),
    }),
    params({ upsId: id }),
  );
  return { status: response.status, body: (await response.json()) as ErrorBody };
}

/** Rows a save leaves behind: a refused one must leave none. */
async function stored() {
  const { rows } = await getDb().execute<{ ups: number; secrets: number }>(sql`
    select (select count(*)::int from ups_devices) as ups,
      (select count(*)::int from credentials where kind = 'ups_secret') as secrets`);
  return rows[0]!;
}

async function sourceOf(id: string) {
  const { rows } = await getDb().execute<{ source: Record<string, unknown> }>(
    sql`select source from ups_devices where id = ${id}`,
  );
  return rows[0]!.source;
}

describe("saving a NUT UPS logs in to upsd first (POST /api/power/ups)", () => {
  it("a user with `upsmon secondary` (and its password): saved, 201", async () => {
    const { status, body } = await create(nut());
    expect(status, JSON.stringify(body)).toBe(201);
  });

  it("a user without an upsmon line (only `actions = SET`): 400 naming upsd.users' upsmon under the user name; nothing saved", async () => {
    const before = await stored();
    const { status, body } = await create(nut(UPSD_PEER_NO_UPSMON));
    expect(status).toBe(400);
    expect(body.error).toContain(
      `refused LOGIN rack1 for user "${UPSD_PEER_NO_UPSMON.username}" (ERR ACCESS-DENIED)`,
    );
    expect(body.error).toContain(
      'upsd.users needs a section [setonly] with this password and the line "upsmon secondary" (or "upsmon primary")',
    );
    expect(body.fieldErrors["source.username"]).toEqual([
      'The user needs "upsmon secondary" (or "upsmon primary") in upsd.users: upsd refused its LOGIN.',
    ]);
    expect(await stored()).toEqual(before);
  });

  it("a wrong password: 400 on the password (and the user name: upsd answers both alike); nothing saved", async () => {
    const before = await stored();
    const { status, body } = await create(nut({ password: "not the password" }));
    expect(status).toBe(400);
    expect(body.fieldErrors["source.password"]).toEqual([
      `Or this is not "${UPSD_PEER_USER.username}"'s password in upsd.users: upsd refuses LOGIN alike for both.`,
    ]);
    expect(body.fieldErrors["source.username"]).toBeDefined();
    expect(await stored()).toEqual(before);
  });

  it("an unknown UPS name: 400 on the UPS name, saying how to list them; nothing saved", async () => {
    const before = await stored();
    const { status, body } = await create(nut({ upsName: "rack9" }));
    expect(status).toBe(400);
    expect(body.fieldErrors).toEqual({
      "source.upsName": [
        `upsd at 127.0.0.1:${peer.port} serves no UPS named "rack9" (upsc -l 127.0.0.1:${peer.port} lists them).`,
      ],
    });
    expect(await stored()).toEqual(before);
  });

  it("nothing listening on the port: 400 on the address and the port; nothing saved", async () => {
    const before = await stored();
    const port = await freePort();
    const { status, body } = await create(nut({ port }));
    expect(status).toBe(400);
    expect(body.fieldErrors["source.host"]).toEqual([
      `upsd at 127.0.0.1:${port} refused the connection: check that upsd runs and LISTENs on this address and port`,
    ]);
    expect(body.fieldErrors["source.port"]).toEqual([
      "Check that upsd listens on this port (upsd.conf LISTEN; its default is 3493).",
    ]);
    expect(await stored()).toEqual(before);
  });

  it("a user name without a password: 400 before connecting", async () => {
    const { status, body } = await create(nut({ password: "" }));
    expect(status).toBe(400);
    expect(Object.keys(body.fieldErrors)).toEqual(["source.password"]);
  });

  it("anonymous (no user): saved when upsd serves the UPS, refused when it does not", async () => {
    const anonymous = nut({ username: undefined, password: undefined });
    expect((await create(anonymous)).status).toBe(201);
    const unknown = await create({ ...anonymous, upsName: "rack9" });
    expect(unknown.status).toBe(400);
    expect(Object.keys(unknown.body.fieldErrors)).toEqual(["source.upsName"]);
  });
});

describe("changing a NUT UPS (PATCH /api/power/ups/:id) tries a changed source the same way", () => {
  it("a new user without upsmon is refused and the stored source stays; the same source (password kept) needs no upsd; a changed one does; switching to anonymous reading is saved", async () => {
    const created = await create(nut());
    const { id } = (created.body as unknown as { ups: { id: string } }).ups;
    const before = await sourceOf(id);

    const refused = await update(id, { source: nut(UPSD_PEER_NO_UPSMON) });
    expect(refused.status).toBe(400);
    expect(refused.body.fieldErrors["source.username"]?.[0]).toMatch(/upsmon secondary/);
    expect(await sourceOf(id)).toEqual(before);

    // The same source again, its password left out (kept): nothing to try, even with upsd down.
    await peer.stopUpsd();
    try {
      const renamed = await update(id, {
        name: `renamed-${id.slice(0, 8)}`,
        source: nut({ password: "" }),
      });
      expect(renamed.status, JSON.stringify(renamed.body)).toBe(200);
      const unreachable = await update(id, { source: nut({ password: "changed" }) });
      expect(unreachable.status).toBe(400);
      expect(Object.keys(unreachable.body.fieldErrors)).toContain("source.host");
    } finally {
      await peer.startUpsd();
    }
    const readAnonymously = await update(id, {
      source: nut({ username: undefined, password: undefined }),
    });
    expect(readAnonymously.status, JSON.stringify(readAnonymously.body)).toBe(200);
    expect(await sourceOf(id)).not.toHaveProperty("username");
  });
});

describe("the UPS forms (server actions) answer the same field errors", () => {
  it("adding and changing through the form: the refusal sits under source.username; nothing saved", async () => {
    actAs(admin);
    const before = await stored();
    const form = new FormData();
    form.set("name", "form-ups");
    for (const [key, value] of Object.entries(nut(UPSD_PEER_NO_UPSMON)))
      form.set(`source.${key}`, String(value));
    const added = await createUpsDeviceAction(null, form);
    expect(added.ok).toBe(false);
    expect(!added.ok && added.fieldErrors["source.username"]?.[0]).toMatch(/upsmon secondary/);
    expect(await stored()).toEqual(before);

    const created = await create(nut());
    const { id } = (created.body as unknown as { ups: { id: string } }).ups;
    form.set("id", id);
    const changed = await updateUpsDeviceAction(null, form);
    expect(changed.ok).toBe(false);
    expect(!changed.ok && changed.fieldErrors["source.username"]?.[0]).toMatch(/upsmon secondary/);
  });
});
