import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { askHostForBmc } from "@/lib/hosts/ask-host-for-bmc";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Asks the host over its pinned SSH key what its BMC reports (`ipmitool lan print`): 200
 * `{ kind: "found", address, mac, addressSource }`, or `no-address`, `no-device`, `no-tool`,
 * `failed` with `detail` saying what to do. A suggestion for the controller's form; nothing is
 * stored or set. POST because it runs a command on the host. 409 for a host never connected to
 * (no pinned key) or retired; 503 when the host cannot be reached.
 */
export const POST = route(
  "POST /api/hosts/[hostId]/power-controller/bmc-report",
  {
    role: "admin",
    summary: "Ask a host for its BMC's LAN address (a suggestion for its power controller)",
    params: { hostId: ZHostId },
  },
  async ({ params: { hostId } }) => json(await askHostForBmc(getDb(), hostId)),
);
