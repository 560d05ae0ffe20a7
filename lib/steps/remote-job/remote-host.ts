import type { Database } from "@/lib/db/client";
import type { Waiter } from "@/lib/pipeline/step";
import { sh, type ExecOptions, type ExecResult, type SshSession } from "@/lib/ssh";
import type { WatchShows } from "./watch-waiter";

/**
 * What the remote-job machinery uses of a host step's services: running commands as root,
 * watching one until it changes, the run's database for log positions. The onboarding steps'
 * HostServices (lib/steps/onboarding/services.ts) are one; the machinery asks for no more, so it
 * sits below the steps that use it.
 */
export type RemoteHost = {
  host(): Promise<{ sshUser: string }>;
  ssh(): Promise<SshSession>;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  watchCommand(what: string, command: string, timeoutSeconds: number, shows?: WatchShows): Waiter;
  config: { pollSeconds: number };
  db: Database;
};

/** A command as root: as is for root, through `sudo -n` (never prompting) for anyone else. */
export function asRoot(sshUser: string, command: string): string {
  return sshUser === "root" ? command : sh`sudo -n sh -c ${command}`;
}
