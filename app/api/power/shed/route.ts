import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { shedPageView } from "@/lib/power/queries/shed-view";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Early load shedding as the power page shows it (viewers): `{ settings, latest }` — the shed
 * settings, and the latest shed run of the last 7 days (`{ runId, status, mode, afterMinutes,
 * guests: [{ vmid, type, node, state, why }], ended, restart, verdict }`: each guest as the run
 * recorded it — `shed` read back stopped, `would` in dry-run, `left-running` with why — and the
 * run that started them again when mains came back before the main trigger), or null.
 */
export const GET = route(
  "GET /api/power/shed",
  { role: "viewer", summary: "Early load shedding: its settings and the latest shed" },
  async () => json(await shedPageView(getDb())),
);
