import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { createUpsDeviceAction } from "@/lib/actions/power/create-ups-device";
import { updateUpsDeviceAction } from "@/lib/actions/power/update-ups-device";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { actAs } from "@/test/next-headers";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as upsDeviceRoute from "./[upsId]/route";
import * as upsRoute from "./route";

/*
 * Issue 30, item 8: the UPS output cycle is a per-UPS yes/no, off unless an admin turns it on.
 * Anything but a boolean is a field error under `outputCycle`, never a 500, and changes nothing.
 */

vi.mock("next/headers", () => import("@/test/next-headers"));
vi.mock("next/cache", () => ({ revalidatePath: () => undefined, revalidateTag: () => undefined }));

registerProcessTestDatabase();
let admin: TestUser;
let lab: LabUps;

beforeAll(async () => {
  admin = await createTestUser(getDb(), "admin");
  lab = await startLabUps({ name: "rack1", snmp: false });
}, 60_000);

afterAll(async () => {
  await lab?.stop();
});

type Body = {
  error?: string;
  fieldErrors?: Record<string, string[]>;
  ups?: { id: string; outputCycle: boolean };
};
let counter = 0;

const source = () => ({
  type: "nut",
  host: lab.nut!.host,
  port: lab.nut!.port,
  upsName: lab.nut!.upsName,
  username: lab.nut!.username,
  password: lab.nut!.password,
});

async function create(extra: Record<string, unknown>) {
  const response = await upsRoute.POST(
    new Request("http://test/api/power/ups", {
      method: "POST",
      headers: admin.authHeaders({ "content-type": "application/json" }),
      body: JSON.stringify({ name: `cycle-${++counter}`, source: source(), ...extra }),
    }),
  );
  return { status: response.status, body: (await response.json()) as Body };
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
  return { status: response.status, body: (await response.json()) as Body };
}

const HOSTILE: unknown[] = ["yes", "true", 1, 0, null, [true], { $ne: false }, "on\nINSTCMD"];

describe("the UPS output cycle setting (POST and PATCH /api/power/ups)", () => {
  it("is off when not given, and on only when an admin says true", async () => {
    const plain = await create({});
    expect(plain.status, JSON.stringify(plain.body)).toBe(201);
    expect(plain.body.ups!.outputCycle).toBe(false);
    const on = await update(plain.body.ups!.id, { outputCycle: true });
    expect(on.status, JSON.stringify(on.body)).toBe(200);
    expect(on.body.ups!.outputCycle).toBe(true);
    // A change of something else keeps it.
    const renamed = await update(plain.body.ups!.id, { name: `renamed-${counter}` });
    expect(renamed.body.ups!.outputCycle).toBe(true);
    const off = await update(plain.body.ups!.id, { outputCycle: false });
    expect(off.body.ups!.outputCycle).toBe(false);
  });

  it("answers anything but a boolean with a field error under outputCycle, and saves nothing", async () => {
    const { body: created } = await create({});
    const id = created.ups!.id;
    for (const value of HOSTILE) {
      const added = await create({ outputCycle: value });
      expect(added.status, JSON.stringify(value)).toBe(400);
      expect(Object.keys(added.body.fieldErrors ?? {})).toEqual(["outputCycle"]);
      const changed = await update(id, { outputCycle: value });
      expect(changed.status, JSON.stringify(value)).toBe(400);
      expect(changed.body.fieldErrors?.outputCycle?.[0]).toBe(
        "Choose whether the console cycles this UPS's output after a shutdown: on or off.",
      );
    }
    const list = await upsRoute.GET(
      new Request("http://test/api/power/ups", { headers: admin.authHeaders() }),
    );
    const { ups } = (await list.json()) as { ups: { id: string; outputCycle: boolean }[] };
    expect(ups.find((u) => u.id === id)?.outputCycle).toBe(false);
  });

  it("through the UPS form: 'true' turns it on, a forged value is a field error", async () => {
    actAs(admin);
    const { body: created } = await create({});
    const form = new FormData();
    form.set("id", created.ups!.id);
    form.set("outputCycle", "maybe");
    const forged = await updateUpsDeviceAction(null, form);
    expect(forged.ok).toBe(false);
    expect(!forged.ok && Object.keys(forged.fieldErrors)).toEqual(["outputCycle"]);

    form.set("outputCycle", "true");
    const saved = await updateUpsDeviceAction(null, form);
    expect(saved.ok, JSON.stringify(saved)).toBe(true);

    const added = new FormData();
    added.set("name", `form-${++counter}`);
    for (const [key, value] of Object.entries(source())) added.set(`source.${key}`, String(value));
    added.set("outputCycle", "1");
    const refused = await createUpsDeviceAction(null, added);
    expect(refused.ok).toBe(false);
    expect(!refused.ok && Object.keys(refused.fieldErrors)).toEqual(["outputCycle"]);
  });
});
