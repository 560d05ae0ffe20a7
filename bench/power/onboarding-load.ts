import { inArray } from "drizzle-orm";
import { startLab, type ImageServer, type LabNode } from "@/lab";
import { labProxmoxKeyring } from "@/lab/debian/apt-sources";
import type { Database } from "@/lib/db/client";
import { runs } from "@/lib/db/schema";
import { createHost } from "@/lib/hosts/create-host";
import { BUILD_VM_TEMPLATE } from "@/lib/steps/onboarding/build-vm-template";
import { onboardingConfigFromEnv, type OnboardingConfig } from "@/lib/steps/onboarding/config";
import { setCatalog } from "@/test/fixtures/build-vm-template";

/** The template every onboarding builds (one published plan version, as bench:onboard). */
const TEMPLATE_VMID = 9000;
const LAB_TIME_SCALE = 0.02;

/** Onboarding against the lab, as bench:onboard configures it: the image server, 0.5 s polls. */
export async function labOnboardingConfig(image: ImageServer): Promise<OnboardingConfig> {
  return {
    ...onboardingConfigFromEnv({}),
    cloudImageUrl: image.imageUrl,
    cloudImageSumsUrl: image.sumsUrl,
    ...labProxmoxKeyring(image.keyringUrl),
    pollSeconds: 0.5,
    rebootDeadlineSeconds: 300,
  };
}

export type InFlight = { running: number; buildingTemplate: number };

export type OnboardingLoad = {
  /** The onboardings running now, and how many of them are building their template. */
  inFlight(): Promise<InFlight>;
  /** Onboardings that ended (succeeded or failed) while the load ran. */
  finished(): number;
  failed(): number;
  /** Stops replacing finished onboardings and stops the lab nodes (runs left are abandoned). */
  stop(): Promise<void>;
};

/**
 * Keeps `count` onboardings in flight on the console's worker (whose onboarding config is
 * labOnboardingConfig), as bench:onboard starts them
 * (fresh Debian lab nodes, createHost as the form does, a published template so each one
 * builds it): whenever one ends, its node is stopped and a fresh one takes its place.
 */
export async function keepOnboarding(db: Database, count: number): Promise<OnboardingLoad> {
  await setCatalog(db, [TEMPLATE_VMID]);
  const inFlight = new Map<string, LabNode>();
  let started = 0;
  let finished = 0;
  let failed = 0;
  let stopping = false;

  const startOne = async () => {
    const node = await startLab({ name: `load${++started}`, timeScale: LAB_TIME_SCALE });
    const { runId } = await createHost(
      db,
      {
        name: node.name,
        address: node.ssh.host,
        sshPort: node.ssh.port,
        apiPort: node.api.port,
        sshUser: node.ssh.username,
        authMethod: "password",
        password: node.ssh.password,
      },
      "bench-power",
    );
    inFlight.set(runId, node);
  };

  await Promise.all(Array.from({ length: count }, startOne));
  const watch = (async () => {
    while (!stopping) {
      const rows = await db
        .select({ id: runs.id, status: runs.status })
        .from(runs)
        .where(inArray(runs.id, [...inFlight.keys()]));
      for (const row of rows.filter((r) => r.status !== "running")) {
        finished++;
        if (row.status !== "succeeded") failed++;
        const node = inFlight.get(row.id)!;
        inFlight.delete(row.id);
        await node.stop();
        if (!stopping) await startOne();
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  })();
  const inFlightNow = async (): Promise<InFlight> => {
    const rows = await db
      .select({ status: runs.status, step: runs.currentStep })
      .from(runs)
      .where(inArray(runs.id, [...inFlight.keys()]));
    const running = rows.filter((r) => r.status === "running");
    return {
      running: running.length,
      buildingTemplate: running.filter((r) => r.step === BUILD_VM_TEMPLATE).length,
    };
  };
  return {
    inFlight: inFlightNow,
    finished: () => finished,
    failed: () => failed,
    async stop() {
      stopping = true;
      await watch;
      await Promise.all([...inFlight.values()].map((node) => node.stop()));
      inFlight.clear();
    },
  };
}
