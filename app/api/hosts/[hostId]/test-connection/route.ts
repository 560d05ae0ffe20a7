import { requestActor } from "@/lib/auth/actor";
import { json, parseId, readJson, respondError } from "@/lib/api/respond";
import { getDb } from "@/lib/db/client";
import { testHostConnection, ZEditHost } from "@/lib/hosts/edit-host";
import { ZHostId } from "@/lib/hosts/schemas";

export const dynamic = "force-dynamic";
export const runtime = "nodejs";

/**
 * Tests connection settings (the PATCH body's shape) against the host's pin without saving:
 * 200 `{ hostKeySha256, privilege }`; 400 with field errors for a refused credential; 409 for
 * a changed host key; 503 when nothing answers at the address.
 */
export async function POST(
  request: Request,
  { params }: { params: Promise<{ hostId: string }> },
): Promise<Response> {
  try {
    await requestActor(request, "operator");
    const hostId = parseId(ZHostId, (await params).hostId, "hostId");
    const edit = ZEditHost.parse(await readJson(request));
    return json(await testHostConnection(getDb(), { hostId, edit }));
  } catch (error) {
    return respondError(error, "POST /api/hosts/[hostId]/test-connection");
  }
}
