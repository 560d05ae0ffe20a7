import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { AUDIT_READER_ROLE } from "@/lib/audit/access";
import { auditFilterInput, listAudit, ZAuditFilter } from "@/lib/audit/list-audit";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One page of the audit log, newest first: `{ entries, nextCursor }`. Filters as query params
 * (`action`, `actor`, `target`, `outcome`, `from`, `to`, `limit`), `cursor` for the next page.
 */
export const GET = route(
  "GET /api/audit",
  {
    role: AUDIT_READER_ROLE,
    summary: "One page of the audit log, newest first",
    query: { schema: ZAuditFilter, read: auditFilterInput },
    errorKeys: "field",
  },
  async ({ query }) => json(await listAudit(getDb(), query)),
);
