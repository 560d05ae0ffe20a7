import type { StepContext } from "@/lib/pipeline/step";
import type { RemoteHost } from "./remote-host";

/**
 * A visit's way to run a command on the host: stdin optional, a timeout per command, and the
 * visit's abort signal on every one, so an aborted or timed-out visit stops its commands too.
 */
export function visitShell(ctx: StepContext<RemoteHost>) {
  return (command: string, stdin?: string, timeoutMs = 60_000) =>
    ctx.services.exec(command, {
      timeoutMs,
      signal: ctx.signal,
      ...(stdin === undefined ? {} : { stdin }),
    });
}
