import type { SourcePosition } from "@/lib/logs/append";
import { tailIntoRunLog, type RemoteExec } from "@/lib/logs/tail-remote-file";
import type { StepContext } from "@/lib/pipeline/step";
import { asRoot, type RemoteHost } from "./remote-host";

/**
 * Commands as root over the tick's connection, not logged: poll-rate reads (a status, a log's
 * tail) would drown the run log in identical lines.
 */
export async function quietRemote(services: RemoteHost): Promise<RemoteExec> {
  const host = await services.host();
  const session = await services.ssh();
  return { exec: (command, opts) => session.exec(asRoot(host.sshUser, command), opts) };
}

/** What a copy of a host file into the run log left: where it ends, and its last line. */
export type HostFileCopy = { position: SourcePosition; lastLine: string | null };

/**
 * Copies what a work's own log on the host (a build's `build.log`, an apt job's `log`) gained
 * since the run log's copy of it ended, by byte offset (lib/logs/tail-remote-file.ts), filed
 * under `step`. `finish` copies an unterminated last line too (its writer is done). Never fails
 * the visit: a copy that could not be made says so in the run log and returns null, and the
 * next copy goes on from the same place.
 */
export async function copyHostFile(
  ctx: StepContext<RemoteHost>,
  file: { step: string; path: string; finish?: boolean },
  remote?: RemoteExec,
): Promise<HostFileCopy | null> {
  try {
    const copied = await tailIntoRunLog({
      db: ctx.services.db,
      session: remote ?? (await quietRemote(ctx.services)),
      runId: ctx.runId,
      step: file.step,
      path: file.path,
      finish: file.finish ?? false,
    });
    return { position: copied.position, lastLine: copied.lastLine };
  } catch (error) {
    const reason = (error instanceof Error ? error.message : String(error)).split("\n")[0];
    ctx.log(`could not copy the host's ${file.path} into this log now: ${reason}`);
    return null;
  }
}
