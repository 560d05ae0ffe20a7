import { HostKeyMismatchError, SshAuthError, SshError } from "@/lib/ssh";
import { advance, poll, type Outcome } from "@/lib/pipeline/step";

/** Visits a best-effort step makes against a host that does not answer before reporting it. */
export const UNREACHABLE_ATTEMPTS = 3;
const RETRY_SECONDS = 5;

/**
 * Best effort against a host that may be gone for good: an SSH failure is tried again a few
 * times (a host rebooting should still be cleaned up), then reported as the step's result — and
 * the pipeline goes on. A changed host key or a refused login is reported at once: waiting fixes
 * neither, and a changed key is never connected to. `notDone` says what was therefore left on
 * the host and how to remove it by hand.
 */
export async function bestEffortOverSsh(
  visit: number,
  notDone: string,
  work: () => Promise<Outcome>,
): Promise<Outcome> {
  try {
    return await work();
  } catch (error) {
    const reason = error instanceof Error ? error.message.split("\n")[0]! : String(error);
    if (error instanceof HostKeyMismatchError) {
      return advance(`host key changed, not connecting: ${notDone} (${reason})`);
    }
    if (error instanceof SshAuthError) return advance(`login refused: ${notDone} (${reason})`);
    // Anything else (a dropped channel, a command that did not answer in time) may pass.
    const what = error instanceof SshError ? "host unreachable" : "could not finish";
    if (visit < UNREACHABLE_ATTEMPTS) {
      return poll(RETRY_SECONDS, `${what}, attempt ${visit} of ${UNREACHABLE_ATTEMPTS}`);
    }
    return advance(`${what}: ${notDone} (${reason})`);
  }
}
