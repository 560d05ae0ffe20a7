import { requestActor } from "@/lib/auth/actor";
import { json, parseId, readJson, respondError } from "@/lib/api/respond";
import { audited } from "@/lib/audit/record-audit";
import { getDb } from "@/lib/db/client";
import { clearHostPin, ZClearHostPin } from "@/lib/hosts/clear-host-pin";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Clears the host's SSH host key pin: body `{ fingerprint }`, the pin being cleared (a pin that
 * changed meanwhile is not cleared: 409). 200 `{ hostId, cleared }`; 409 without a pin, while a
 * run is running, or for a retired host. The next connection pins what the host presents.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    const actor = await requestActor(request, "operator");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const { fingerprint } = ZClearHostPin.parse(await readJson(request));
    const db = getDb();
    return json(
      await audited(
        db,
        { actor, action: "host.clear_pin", target: `host:${hostId}`, detail: { fingerprint } },
        () => clearHostPin(db, { hostId, actor: actor.name, fingerprint }),
      ),
    );
  } catch (error) {
    return respondError(error, "POST /api/hosts/[hostId]/clear-pin");
  }
}
