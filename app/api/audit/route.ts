import { requestActor } from "@/lib/auth/actor";
import { json, respondError } from "@/lib/api/respond";
import { AUDIT_READER_ROLE } from "@/lib/audit/access";
import { auditFilterInput, listAudit, ZAuditFilter } from "@/lib/audit/list-audit";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * One page of the audit log, newest first: `{ entries, nextCursor }`. Filters as query params
 * (`action`, `actor`, `target`, `outcome`, `from`, `to`, `limit`), `cursor` for the next page.
 */
export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, AUDIT_READER_ROLE);
    const filter = ZAuditFilter.parse(auditFilterInput(new URL(request.url).searchParams));
    return json(await listAudit(getDb(), filter));
  } catch (error) {
    return respondError(error, "GET /api/audit");
  }
}
