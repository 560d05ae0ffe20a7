import { requestStillAllowed, type Actor } from "@/lib/auth/actor";
import type { Role } from "@/lib/roles";
import { processReachability } from "@/lib/db/reachability";
import { isDatabaseUnreachable } from "@/lib/db/unreachable";
import { safeErrorSummary } from "@/lib/errors";
import type { WatchAccess } from "@/lib/live/event-stream";
import type { LiveEvent, LiveListener } from "@/lib/live/listener";
import { serialRerun } from "@/lib/live/serial-rerun";

/** How often an open stream re-checks its credential when nothing told it to sooner. */
export const ACCESS_RECHECK_MS = 15_000;

/**
 * Keeps a long-lived stream honest about who opened it. The credential is checked once when the
 * request arrives; a stream can stay open for hours, so it is checked again every `everyMs` (an
 * idle session or the 7-day limit can run out meanwhile) and at once when the database says the
 * user's access changed (sign-out, disable, password reset, token revoked, role changed).
 *
 * Only a definite "no" ends the stream: a check that could not reach the database is not
 * evidence the user was signed out, so the stream stays and the next check asks again.
 */
export function watchStreamAccess(options: {
  actor: Actor;
  stillAllowed: () => Promise<boolean>;
  listener: LiveListener;
  everyMs?: number;
}): WatchAccess {
  return (onRevoked) => {
    let stopped = false;
    const check = serialRerun(
      async () => {
        let allowed: boolean;
        try {
          allowed = await options.stillAllowed();
        } catch (error) {
          // While the database is away every open stream fails its check the same way: the
          // process's one outage line says it, not a line per stream every 15 s.
          if (isDatabaseUnreachable(error)) processReachability().lost(error);
          else {
            console.error(
              `re-checking ${options.actor.name}'s stream failed (kept open): ${safeErrorSummary(error)}`,
            );
          }
          allowed = true;
        }
        if (!allowed && !stopped) {
          stop();
          onRevoked();
        }
      },
      () => stopped,
    );
    const unsubscribe = options.listener.subscribe((event: LiveEvent) => {
      const concernsUs =
        event.kind === "message"
          ? event.message.type === "access" && event.message.userId === options.actor.userId
          : event.connected; // notifications sent while the listener was down are lost
      if (concernsUs) void check();
    });
    const timer = setInterval(() => void check(), options.everyMs ?? ACCESS_RECHECK_MS);
    const stop = () => {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      unsubscribe();
    };
    return stop;
  };
}

/** The watch for a route handler's stream: the request's own cookie or token, checked again. */
export function watchRequestAccess(
  request: Request,
  actor: Actor,
  required: Role,
  listener: LiveListener,
): WatchAccess {
  return watchStreamAccess({
    actor,
    listener,
    stillAllowed: () => requestStillAllowed(request, required),
  });
}
