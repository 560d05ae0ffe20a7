import type { FleetPage } from "@/lib/hosts/fleet-query";
import type { FleetSort } from "@/lib/hosts/fleet-schemas";
import { hostStateOf, type HostState } from "@/lib/hosts/host-state";
import type { HostSummary } from "@/lib/hosts/list-hosts";
import { attentionReasons } from "@/lib/hosts/needs-attention";
import type { BrowserLiveMessage } from "./live-provider";

type RunMessage = Extract<BrowserLiveMessage, { type: "run" }>;
type RunMessageWithFacts = RunMessage & Required<Pick<RunMessage, "status">> & { hostId: string };

/** A run message that carries the run's facts (lib/live/notify.ts notifyLive). */
export function hasRunFacts(message: BrowserLiveMessage): message is RunMessageWithFacts {
  return (
    message.type === "run" &&
    message.hostId !== null &&
    message.status !== undefined &&
    message.step !== undefined &&
    message.stepStartedAt !== undefined &&
    message.createdAt !== undefined &&
    message.updatedAt !== undefined
  );
}

/** The host row as the message says it is now: state, step, phase, failure, attention. */
export function patchHost(host: HostSummary, message: RunMessageWithFacts): HostSummary {
  const state = hostStateOf(message.status, {
    retiredAt: host.retiredAt,
    pipeline: message.pipeline ?? null,
    failureReason: message.failureReason ?? null,
  });
  // A message from another run than the row's is a new run: nothing was done since it ended.
  const actedSinceRun = host.run?.id === message.runId ? host.actedSinceRun : false;
  return {
    ...host,
    state,
    lastActivityAt: message.updatedAt!,
    // A message means a tick just committed: whatever was overdue is not any more.
    stalled: false,
    actedSinceRun,
    attention: attentionReasons({
      state,
      templateCheckState: host.templateCheck.state,
      stalled: false,
      actedSinceRun,
    }),
    run: {
      id: message.runId,
      status: message.status,
      currentStep: message.step!,
      phase: message.phase ?? null,
      stepStartedAt: message.stepStartedAt!,
      failureReason: message.failureReason ?? null,
      failedStep: message.failedStep ?? null,
      createdAt: message.createdAt!,
      finishedAt: message.finishedAt ?? null,
    },
  };
}

/**
 * What one live message does to the page on screen:
 * - `page`: the page with the host's row patched in place (the same object when it is not on it);
 * - `state`: the host's state now (for hosts off the page, only the counts can change);
 * - `refresh`: whether the counts, the total or the page's order may have changed, so one
 *   (coalesced) re-read is due. Not when a known host stays in its state: a phase moving on
 *   changes neither counts nor membership, unless the page is sorted by last update.
 */
export function applyLiveMessage(
  page: FleetPage,
  message: BrowserLiveMessage,
  knownState: HostState | undefined,
  sort: FleetSort,
): { page: FleetPage; state: HostState | null; refresh: boolean } {
  if (!hasRunFacts(message)) return { page, state: null, refresh: true };
  const index = page.hosts.findIndex((host) => host.id === message.hostId);
  const before = index >= 0 ? page.hosts[index]!.state : knownState;
  if (index < 0) {
    const state = hostStateOf(message.status, {
      pipeline: message.pipeline ?? null,
      failureReason: message.failureReason ?? null,
    });
    return { page, state, refresh: before !== state || sort === "updated" };
  }
  const patched = patchHost(page.hosts[index]!, message);
  const hosts = page.hosts.slice();
  hosts[index] = patched;
  return {
    page: { ...page, hosts },
    state: patched.state,
    refresh: before !== patched.state || sort === "updated",
  };
}
