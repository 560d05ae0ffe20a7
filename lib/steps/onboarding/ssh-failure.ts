import { HostKeyMismatchError, SshAuthError } from "@/lib/ssh";
import { fail, type Outcome } from "@/lib/pipeline/step";

/**
 * SSH failures that waiting cannot fix: a changed host key (never connect, tell the operator)
 * and refused credentials. They fail the step at once instead of burning the retry budget;
 * everything else (refused connection, timeout) is thrown and retried with backoff.
 */
export async function withPermanentSshFailures(visit: () => Promise<Outcome>): Promise<Outcome> {
  try {
    return await visit();
  } catch (error) {
    if (error instanceof HostKeyMismatchError || error instanceof SshAuthError)
      return fail(error.message);
    throw error;
  }
}
