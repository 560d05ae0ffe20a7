import { respondForHost, type HostRouteContext } from "@/lib/api/host-route";
import { json, readJson } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { testHostConnection, ZEditHost } from "@/lib/hosts/edit-host";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Tests connection settings (the PATCH body's shape) against the host's pin without saving:
 * 200 `{ hostKeySha256, privilege }`; 400 with field errors for a refused credential; 409 for
 * a changed host key; 503 when nothing answers at the address.
 */
export async function POST(request: Request, context: HostRouteContext): Promise<Response> {
  return respondForHost(
    request,
    context,
    "operator",
    "POST /api/hosts/[hostId]/test-connection",
    async (_actor, hostId) => {
      const edit = ZEditHost.parse(await readJson(request));
      return json(await testHostConnection(getDb(), { hostId, edit }));
    },
  );
}
