import { desc } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { consoleKeys } from "@/lib/db/schema";

import { installKeyCommand } from "./commands";
import { hostsOnConsoleKey } from "./rotation/keys-in-use";
import { latestRotationStatus, type RotationStatus } from "./rotation/status";
import {
  ensureConsoleKey,
  publicColumns,
  type ConsoleKeyInfo,
} from "@/lib/host-access/console-key-store";

/** Everything the SSH key page and `GET /api/console-key` show. No private key, ever. */
export type ConsoleKeyOverview = {
  key: ConsoleKeyInfo;
  installCommand: string;
  /** Hosts that log in with a console key (the ones a rotation moves). */
  hostCount: number;
  /** Every key the console has had, newest first, with its state. */
  history: ConsoleKeyInfo[];
  rotation: RotationStatus | null;
};

export async function consoleKeyOverview(db: Database): Promise<ConsoleKeyOverview> {
  const key = await ensureConsoleKey(db);
  const [hostsOnKey, history, rotation] = await Promise.all([
    hostsOnConsoleKey(db),
    db.select(publicColumns).from(consoleKeys).orderBy(desc(consoleKeys.createdAt)),
    latestRotationStatus(db),
  ]);
  return {
    key,
    installCommand: installKeyCommand(key.publicKey),
    hostCount: hostsOnKey.length,
    history,
    rotation,
  };
}
