import type { Database } from "@/lib/db/client";
import { notifyLive } from "@/lib/live/notify";

/**
 * Tells every web server, on commit, that what `userId` may do changed (a session ended, a token
 * was revoked, the role changed): their open live and log streams of that user re-check at once
 * instead of at the next heartbeat (lib/auth/stream-access.ts).
 */
export function notifyAccessChanged(db: Pick<Database, "execute">, userId: string): Promise<void> {
  return notifyLive(db, { type: "access", userId });
}
