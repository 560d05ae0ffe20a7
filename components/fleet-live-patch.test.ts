import { describe, expect, it } from "vitest";
import type { FleetPage } from "@/lib/hosts/fleet-query";
import type { HostSummary } from "@/lib/hosts/list-hosts";
import { applyLiveMessage } from "./fleet-live-patch";
import type { BrowserLiveMessage } from "./live-provider";

const HOST_A = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9a";
const HOST_OFF_PAGE = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9b";
const RUN = "1b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";

function host(overrides: Partial<HostSummary> = {}): HostSummary {
  return {
    id: HOST_A,
    name: "pve-a",
    address: "10.0.0.1",
    sshPort: 22,
    sshUser: "root",
    authMethod: "password",
    hostKeySha256: null,
    state: "onboarding",
    retiredAt: null,
    lastActivityAt: "2026-11-30T05:00:00.000Z",
    stalled: true,
    actedSinceRun: false,
    attention: ["stalled"],
    run: {
      id: RUN,
      status: "running",
      currentStep: "InstallProxmoxVe",
      phase: "apt-get: 10 %",
      stepStartedAt: "2026-11-30T04:59:00.000Z",
      failureReason: null,
      failedStep: null,
      createdAt: "2026-11-30T04:50:00.000Z",
      finishedAt: null,
    },
    templateCheck: { state: "unchecked", failure: null, checkedAt: null },
    proxmox: { nodeName: null, apiPort: 8006, apiCertSha256: null, apiTokenId: null },
    capacity: null,
    ...overrides,
  };
}

const page = (hosts: HostSummary[]): FleetPage => ({
  hosts,
  total: 2,
  countsByState: {
    failed: 0,
    aborted: 0,
    onboarding: 2,
    decommissioning: 0,
    active: 0,
    retired: 0,
  },
  attentionCount: 1,
  failedSteps: [],
  clusters: [],
  page: { number: 1, size: 50, totalPages: 1 },
});

const runMessage = (hostId: string, facts: Partial<BrowserLiveMessage> = {}): BrowserLiveMessage =>
  ({
    type: "run",
    runId: RUN,
    hostId,
    status: "running",
    pipeline: "onboard-host",
    step: "InstallProxmoxVe",
    phase: "apt-get: 55 %",
    stepStartedAt: "2026-11-30T04:59:00.000Z",
    failedStep: null,
    failureReason: null,
    createdAt: "2026-11-30T04:50:00.000Z",
    updatedAt: "2026-11-30T05:01:00.000Z",
    finishedAt: null,
    ...facts,
  }) as BrowserLiveMessage;

describe("fleet live patch", () => {
  it("a phase change patches the row in place and asks for no request", () => {
    const before = page([host()]);
    const outcome = applyLiveMessage(before, runMessage(HOST_A), undefined, "name");
    expect(outcome.refresh).toBe(false);
    const row = outcome.page.hosts[0]!;
    expect(row.run!.phase).toBe("apt-get: 55 %");
    expect(row.lastActivityAt).toBe("2026-11-30T05:01:00.000Z");
    // A tick just committed: it is not stalled any more.
    expect(row.stalled).toBe(false);
    expect(row.attention).toEqual([]);
    expect(before.hosts[0]!.run!.phase).toBe("apt-get: 10 %");
  });

  it("a state change patches the row with its failure and asks for one refresh (counts moved)", () => {
    const outcome = applyLiveMessage(
      page([host()]),
      runMessage(HOST_A, {
        status: "failed",
        phase: null,
        failedStep: "InstallProxmoxVe",
        failureReason: "apt-get failed: dpkg was interrupted",
        finishedAt: "2026-11-30T05:01:00.000Z",
      }),
      undefined,
      "name",
    );
    expect(outcome.refresh).toBe(true);
    expect(outcome.state).toBe("failed");
    const row = outcome.page.hosts[0]!;
    expect(row.state).toBe("failed");
    expect(row.attention).toEqual(["failed"]);
    expect(row.run!.failureReason).toBe("apt-get failed: dpkg was interrupted");
  });

  it("a host off the page moves only the counts: unknown or changed state refreshes, a known one does not", () => {
    const onScreen = page([host()]);
    const first = applyLiveMessage(onScreen, runMessage(HOST_OFF_PAGE), undefined, "name");
    expect(first.page).toBe(onScreen);
    expect(first.refresh).toBe(true);
    expect(first.state).toBe("onboarding");
    expect(
      applyLiveMessage(onScreen, runMessage(HOST_OFF_PAGE), "onboarding", "name").refresh,
    ).toBe(false);
    const done = runMessage(HOST_OFF_PAGE, { status: "succeeded" });
    expect(applyLiveMessage(onScreen, done, "onboarding", "name")).toMatchObject({
      refresh: true,
      state: "active",
    });
  });

  it("sorted by last update, any change may reorder the page: refresh", () => {
    expect(applyLiveMessage(page([host()]), runMessage(HOST_A), undefined, "updated").refresh).toBe(
      true,
    );
  });

  it("a message without the run's facts (or about a host) asks for a refresh", () => {
    const onScreen = page([host()]);
    const bare = { type: "run", runId: RUN, hostId: HOST_A } as BrowserLiveMessage;
    expect(applyLiveMessage(onScreen, bare, "onboarding", "name")).toMatchObject({
      page: onScreen,
      refresh: true,
    });
    expect(
      applyLiveMessage(onScreen, { type: "host", hostId: HOST_A }, "onboarding", "name").refresh,
    ).toBe(true);
  });

  it("a running decommission run reads decommissioning", () => {
    const outcome = applyLiveMessage(
      page([host({ state: "active" })]),
      runMessage(HOST_A, { pipeline: "decommission-host", step: "RemoveApiToken" }),
      undefined,
      "name",
    );
    expect(outcome.page.hosts[0]!.state).toBe("decommissioning");
    expect(outcome.refresh).toBe(true);
  });
});
