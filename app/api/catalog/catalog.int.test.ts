import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { routeParams as params, registerProcessTestDatabase } from "@/test/process-database";
import * as versionsRoute from "./plans/[planId]/versions/route";
import * as plansRoute from "./plans/route";
import * as catalogRoute from "./route";
import * as publishRoute from "./versions/[versionId]/publish/route";

// The route handlers use the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
// Every call is made as a signed-in admin through a real API token.
let signedIn: TestUser;
const auth = (extra?: Record<string, string>) => signedIn.authHeaders(extra);

beforeAll(async () => {
  signedIn = await createTestUser(getDb(), "admin");
});

type ErrorBody = { error: string; fieldErrors: Record<string, string[]> };
type Catalog = {
  plans: {
    id: string;
    slug: string;
    versions: { id: string; version: number; templateVmid: number; publishedAt: string | null }[];
  }[];
  requiredTemplateVmids: { catalogPublished: boolean; vmids: number[] };
};

const postJson = (body: unknown) =>
  new Request("http://test/api/catalog", {
    method: "POST",
    headers: auth({ "content-type": "application/json" }),
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
const unknownId = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
const version = { templateVmid: 9001, cores: 2, memoryMib: 2048, diskGib: 40 };

async function catalog(): Promise<Catalog> {
  const response = await catalogRoute.GET(
    new Request("http://test/api/catalog", { headers: auth() }),
  );
  expect(response.status).toBe(200);
  return (await response.json()) as Catalog;
}
async function createPlan(slug: string): Promise<string> {
  const response = await plansRoute.POST(postJson({ slug, name: `Plan ${slug}` }));
  expect(response.status).toBe(201);
  return ((await response.json()) as { planId: string }).planId;
}
const createVersion = (planId: string, body: unknown) =>
  versionsRoute.POST(postJson(body), params({ planId }));
const publish = (versionId: string) =>
  publishRoute.POST(
    new Request("http://test", { method: "POST", headers: auth() }),
    params({ versionId }),
  );

describe("catalog JSON API", () => {
  it("GET /api/catalog on a fresh installation: no plans, no published catalog, nothing required", async () => {
    expect(await catalog()).toEqual({
      plans: [],
      requiredTemplateVmids: { catalogPublished: false, vmids: [] },
    });
  });

  it("POST /api/catalog/plans adds a plan (201) and answers a taken slug with 409 and a slug field error", async () => {
    const planId = await createPlan("vps-small");
    expect(planId).toMatch(/^[0-9a-f-]{36}$/);
    const taken = await plansRoute.POST(postJson({ slug: "vps-small", name: "Again" }));
    expect(taken.status).toBe(409);
    const body = (await taken.json()) as ErrorBody;
    expect(body.error).toContain("vps-small");
    expect(body.fieldErrors.slug).toBeDefined();
  });

  it("POST /api/catalog/plans answers invalid JSON and invalid input with 400 { error, fieldErrors }", async () => {
    expect((await plansRoute.POST(postJson("{nope"))).status).toBe(400);
    const invalid = await plansRoute.POST(postJson({ slug: "Not A Slug", name: "" }));
    expect(invalid.status).toBe(400);
    const body = (await invalid.json()) as ErrorBody;
    expect(Object.keys(body.fieldErrors).sort()).toEqual(["name", "slug"]);
  });

  it.each([
    [99, "start at 100"],
    [1e10, "end at 999999999"],
    ["abc", "Enter a VMID"],
    [9001.5, "whole number"],
  ])(
    "POST …/versions refuses the template VMID %s with 400 and a templateVmid field error",
    async (templateVmid, message) => {
      const planId = await createPlan(`vmid-${crypto.randomBytes(4).toString("hex")}`);
      const response = await createVersion(planId, { ...version, templateVmid });
      expect(response.status).toBe(400);
      const body = (await response.json()) as ErrorBody;
      expect(Object.keys(body.fieldErrors)).toEqual(["templateVmid"]);
      expect(body.fieldErrors.templateVmid?.[0]).toContain(message);
    },
  );

  it("POST …/versions accepts the ends of Proxmox's VMID range, 100 and 999999999", async () => {
    const planId = await createPlan("vmid-range");
    expect((await createVersion(planId, { ...version, templateVmid: 100 })).status).toBe(201);
    expect((await createVersion(planId, { ...version, templateVmid: 999_999_999 })).status).toBe(
      201,
    );
  });

  it("POST …/versions refuses a sale that ends before (or when) it starts: 400 on saleEndsAt", async () => {
    const planId = await createPlan("window");
    for (const saleEndsAt of ["2026-11-30T12:00:00Z", "2026-12-01T12:00:00Z"]) {
      const response = await createVersion(planId, {
        ...version,
        saleStartsAt: "2026-12-01T12:00:00Z",
        saleEndsAt,
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as ErrorBody;
      expect(body.fieldErrors.saleEndsAt?.[0]).toContain("end after it starts");
    }
    const badDate = await createVersion(planId, { ...version, saleStartsAt: "tomorrow-ish" });
    expect(badDate.status).toBe(400);
    expect(((await badDate.json()) as ErrorBody).fieldErrors.saleStartsAt).toBeDefined();
  });

  it("POST …/versions: 404 for an unknown plan, 400 for a malformed plan id or a body that is not an object", async () => {
    expect((await createVersion(unknownId, version)).status).toBe(404);
    const malformed = await createVersion("x'; drop", version);
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as ErrorBody).fieldErrors.planId).toBeDefined();
    const planId = await createPlan("not-an-object");
    expect((await createVersion(planId, [9001])).status).toBe(400);
    expect((await createVersion(planId, "{nope")).status).toBe(400);
  });

  it("versions are numbered per plan, drafts until published; the plan in the path wins over one in the body", async () => {
    const planId = await createPlan("numbering");
    const other = await createPlan("numbering-other");
    expect((await createVersion(planId, { ...version, planId: other })).status).toBe(201);
    expect((await createVersion(planId, version)).status).toBe(201);
    const plans = (await catalog()).plans;
    const plan = plans.find((p) => p.id === planId)!;
    expect(plan.versions.map((v) => [v.version, v.publishedAt])).toEqual([
      [2, null],
      [1, null],
    ]);
    expect(plans.find((p) => p.id === other)!.versions).toEqual([]);
  });

  it("publishing makes the version's template VMID required; publishing it twice is a 409", async () => {
    const planId = await createPlan("publish-me");
    const created = await createVersion(planId, { ...version, templateVmid: 9123 });
    const { planVersionId } = (await created.json()) as { planVersionId: string };
    expect((await catalog()).requiredTemplateVmids.vmids).not.toContain(9123);

    const published = await publish(planVersionId);
    expect(published.status).toBe(200);
    expect(await published.json()).toEqual({ planVersionId });
    const after = await catalog();
    expect(after.requiredTemplateVmids.catalogPublished).toBe(true);
    expect(after.requiredTemplateVmids.vmids).toContain(9123);
    const publishedAt = after.plans.find((p) => p.id === planId)!.versions[0]!.publishedAt;
    expect(publishedAt).not.toBeNull();

    const again = await publish(planVersionId);
    expect(again.status).toBe(409);
    expect(((await again.json()) as ErrorBody).error).toContain("published already");
    // The second attempt changed nothing.
    expect((await catalog()).plans.find((p) => p.id === planId)!.versions[0]!.publishedAt).toBe(
      publishedAt,
    );
  });

  it("a published version whose sale window has ended requires nothing", async () => {
    const planId = await createPlan("sold-out");
    const created = await createVersion(planId, {
      ...version,
      templateVmid: 9456,
      saleStartsAt: "2020-01-01T00:00:00Z",
      saleEndsAt: "2020-02-01T00:00:00Z",
    });
    const { planVersionId } = (await created.json()) as { planVersionId: string };
    expect((await publish(planVersionId)).status).toBe(200);
    expect((await catalog()).requiredTemplateVmids.vmids).not.toContain(9456);
  });

  it("publish: 404 for an unknown version, 400 for a malformed id", async () => {
    expect((await publish(unknownId)).status).toBe(404);
    const malformed = await publish("42");
    expect(malformed.status).toBe(400);
    expect(((await malformed.json()) as ErrorBody).fieldErrors.planVersionId).toBeDefined();
  });
});
