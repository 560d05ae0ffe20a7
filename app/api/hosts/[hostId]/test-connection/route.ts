import { route } from "@/lib/api/route";
import { json } from "@/lib/api/respond";
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
export const POST = route(
  "POST /api/hosts/[hostId]/test-connection",
  {
    role: "operator",
    summary: "Test connection settings against a host without saving them",
    params: { hostId: ZHostId },
    body: { schema: ZEditHost, read: "json" },
    errorKeys: "field",
  },
  async ({ params: { hostId }, body: edit }) =>
    json(await testHostConnection(getDb(), { hostId, edit })),
);
