import { beforeAll, describe, expect, it } from "vitest";
import type { AuditAction } from "@/lib/audit/actions";
import type { AuditPage } from "@/lib/audit/list-audit";
import { recordAudit } from "@/lib/audit/record-audit";
import { getDb, getPool } from "@/lib/db/client";
import { createTestUser, type TestUser } from "@/test/auth";
import { registerProcessTestDatabase } from "@/test/process-database";
import { GET } from "./route";

// The route handler uses the process-wide database from DATABASE_URL, as in production.
registerProcessTestDatabase();
let operator: TestUser;
let viewer: TestUser;

const ACTIONS: AuditAction[] = ["host.create", "run.retry", "run.abort"];
const OUTCOMES = ["success", "failure", "denied"] as const;
const TOTAL = 130;

beforeAll(async () => {
  operator = await createTestUser(getDb(), "operator");
  viewer = await createTestUser(getDb(), "viewer");
  for (let i = 0; i < TOTAL; i++) {
    await recordAudit(getDb(), {
      actor: { userId: null, name: i % 2 ? "alice" : "bob_100%" },
      action: ACTIONS[i % 3]!,
      target: `host:pve-${String(i).padStart(3, "0")}`,
      outcome: OUTCOMES[i % 3]!,
    });
  }
  // Five entries with the same `at`: only the id tie-break of the keyset tells them apart.
  await getPool().query(
    `insert into audit_log (at, actor_name, action, target, outcome)
     select '2026-01-01T00:00:00Z', 'carol', 'user.create', 'user:dave', 'success'
     from generate_series(1, 5)`,
  );
});

async function get(query: string): Promise<{ status: number; body: AuditPage & FieldErrors }> {
  const response = await GET(
    new Request(`http://test/api/audit?${query}`, { headers: operator.authHeaders() }),
  );
  return { status: response.status, body: (await response.json()) as AuditPage & FieldErrors };
}
type FieldErrors = { error?: string; fieldErrors?: Record<string, string[]> };

describe("GET /api/audit", () => {
  it("pages through every entry newest first, by keyset, without gaps or repeats", async () => {
    const seen: number[] = [];
    let cursor: string | null = "";
    let pages = 0;
    while (cursor !== null) {
      const { status, body } = await get(`limit=33${cursor ? `&cursor=${cursor}` : ""}`);
      expect(status).toBe(200);
      seen.push(...body.entries.map((entry) => entry.id));
      cursor = body.nextCursor;
      pages++;
    }
    // 33 per page puts a page boundary inside the five same-`at` entries (rows 130–134).
    expect(pages).toBe(5);
    expect(seen).toHaveLength(TOTAL + 5);
    expect(new Set(seen).size).toBe(TOTAL + 5);
    // Newest first: the backdated entries (same `at`, ids descending) come last.
    const { rows } = await getPool().query<{ id: string }>(
      "select id from audit_log order by at desc, id desc",
    );
    expect(seen).toEqual(rows.map((row) => Number(row.id)));
  });

  it("filters by action, actor, target, outcome and time range", async () => {
    const byAction = await get("action=run.abort&limit=200");
    expect(byAction.body.entries.length).toBe((TOTAL / 3 - (TOTAL % 3 === 0 ? 0 : 0)) | 0);
    expect(byAction.body.entries.every((entry) => entry.action === "run.abort")).toBe(true);

    const byActor = await get("actor=ALI&limit=200");
    expect(byActor.body.entries).toHaveLength(TOTAL / 2);

    // % is a literal character, not a LIKE wildcard
    const literal = await get(`actor=${encodeURIComponent("100%")}&limit=200`);
    expect(literal.body.entries).toHaveLength(TOTAL / 2);
    expect((await get(`actor=${encodeURIComponent("b%0")}`)).body.entries).toHaveLength(0);

    const byTarget = await get("target=pve-12");
    expect(byTarget.body.entries.map((entry) => entry.target).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `host:pve-12${i}`),
    );

    const byOutcome = await get("outcome=denied&limit=200");
    expect(byOutcome.body.entries.every((entry) => entry.outcome === "denied")).toBe(true);
    expect(byOutcome.body.entries.length).toBeGreaterThan(40);

    const old = await get("from=2025-12-31T00:00&to=2026-01-02T00:00:00Z");
    expect(old.body.entries).toHaveLength(5);
    expect(old.body.entries.every((entry) => entry.actorName === "carol")).toBe(true);
    const recent = await get(`from=2026-01-01T00:00:01&limit=200`);
    expect(recent.body.entries).toHaveLength(TOTAL);
  });

  it("answers bad filters with 400 and field errors, never a 500", async () => {
    for (const [query, field] of [
      ["action=host.explode", "action"],
      ["outcome=maybe", "outcome"],
      ["from=yesterday", "from"],
      ["from=2026-02-01T00:00Z&to=2026-01-01T00:00Z", "to"],
      ["limit=0", "limit"],
      ["limit=1e9", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      [`cursor=${Buffer.from('{"at":"x","id":1}').toString("base64url")}`, "cursor"],
      [`actor=${"a".repeat(201)}`, "actor"],
    ] as const) {
      const { status, body } = await get(query);
      expect(status, query).toBe(400);
      expect(body.fieldErrors?.[field], query).toBeDefined();
    }
  });

  it("is for operators and admins: a viewer gets 403, no credentials 401", async () => {
    const asViewer = await GET(
      new Request("http://test/api/audit", { headers: viewer.authHeaders() }),
    );
    expect(asViewer.status).toBe(403);
    // Last in this file: the refusal itself is recorded (with the viewer as actor).
    const { body } = await get(`action=access.denied&actor=${viewer.user.name}`);
    expect(body.entries.map((entry) => [entry.target, entry.outcome])).toEqual([
      ["GET /api/audit", "denied"],
    ]);
    expect((await GET(new Request("http://test/api/audit"))).status).toBe(401);
  });
});
