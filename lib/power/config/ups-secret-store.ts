import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials } from "@/lib/db/schema";
import { unseal } from "@/lib/secrets/seal";
import { ZUpsSourceSecret, type UpsSourceSecret } from "./ups-source-config";

/** The UPS's stored secret, unsealed (for the monitor's connection and for merging a change). */
export async function readSecret(
  db: Pick<Database, "select">,
  credentialId: string | null,
): Promise<UpsSourceSecret | null> {
  if (credentialId === null) return null;
  const [row] = await db.select().from(credentials).where(eq(credentials.id, credentialId));
  if (!row) return null;
  return ZUpsSourceSecret.parse(JSON.parse(unseal(row.sealed)));
}
