import crypto from "node:crypto";
import { eq } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import { credentials, hosts, runs } from "@/lib/db/schema";
import { seal } from "@/lib/secrets/seal";

/** Where a lab node's API answers and with which token (a cluster node or a standalone one). */
export type LabApi = {
  nodeName: string;
  port: number;
  certSha256: string;
  token: { id: string; secret: string };
};

async function sealed(db: Database, kind: "password" | "api_token", secret: string) {
  const [row] = await db
    .insert(credentials)
    .values({ kind, sealed: seal(secret) })
    .returning({ id: credentials.id });
  return row!.id;
}

/** Points the host's API record (address, node, pin, token) at a lab node's API. */
export async function pointHostAt(db: Database, hostId: string, api: LabApi): Promise<void> {
  await db
    .update(hosts)
    .set({
      address: "127.0.0.1",
      apiPort: api.port,
      nodeName: api.nodeName,
      apiCertSha256: api.certSha256,
      apiTokenId: api.token.id,
      apiTokenCredentialId: await sealed(db, "api_token", api.token.secret),
    })
    .where(eq(hosts.id, hostId));
}

/** An active host (its onboarding run succeeded) whose API is the given lab node's. */
export async function seedActiveLabHost(
  db: Database,
  api: LabApi,
  name = `${api.nodeName}-${crypto.randomBytes(3).toString("hex")}`,
): Promise<string> {
  const [host] = await db
    .insert(hosts)
    .values({
      name,
      address: "127.0.0.1",
      sshUser: "root",
      credentialId: await sealed(db, "password", JSON.stringify({ password: "unused" })),
    })
    .returning({ id: hosts.id });
  await db.insert(runs).values({
    pipeline: "onboard-host",
    hostId: host!.id,
    currentStep: "VerifyProxmoxApi",
    status: "succeeded",
    finishedAt: new Date(),
  });
  await pointHostAt(db, host!.id, api);
  return host!.id;
}
