import { startLab, type LabNode } from "@/lab";
import { startLabUps, type LabUps } from "@/lab/ups/lab-ups";
import { startUntilEnd } from "../support/run-bench";
import { describeAnswer, type ApiAnswer } from "./api";
import type { SecretWatch } from "./secrets";
import type { SoakContext } from "./soak-context";
import { apiTokenSecretsOn, FIRST_TEMPLATE_VMID, TIME_SCALE } from "./soak-lab";

/** Lab nodes the power load protects: onboarded Proxmox, shut down and powered on again. */
export const POWER_NODES = 2;
/** How long a power host's onboarding (it only checks: templates are seeded) may take. */
const ACTIVE_WITHIN_MS = 180_000;
const UPS_NAME = "soak-ups";

export type PowerTarget = { id: string; hostId: string; node: LabNode };

/** The lab UPS and the nodes it feeds, as the soak's power load drives them. */
export type PowerFleet = { ups: LabUps; upsId: string; targets: PowerTarget[] };

/**
 * The power side of the lab: a lab UPS (its NUT face; the console reads it as `upsmon
 * secondary`) and POWER_NODES onboarded Proxmox nodes of their own, with both templates the
 * first catalog publishes already there, so adding them only checks them. They are not in the
 * soak's fleet: the onboarding load never re-onboards or decommissions them and the node faults
 * never hit them, so every shutdown call the console makes to one can be counted against the
 * outage that caused it (a node that refuses or hangs on purpose would make "exactly one call"
 * ambiguous). The console's processes and database are hurt while they are power targets.
 */
export async function startPowerLab(secrets: SecretWatch) {
  const ups = await startUntilEnd(
    "lab UPS",
    startLabUps({ name: "soakups", snmp: false }),
    (started) => started.stop(),
  );
  secrets.add("NUT password of the lab UPS", ups.nut!.password);
  secrets.add("NUT primary password of the lab UPS", ups.nut!.primary.password);
  const nodes = await Promise.all(
    Array.from({ length: POWER_NODES }, async (_, i) => {
      const node = await startUntilEnd(
        `lab node pwr${i + 1}`,
        startLab({
          name: `pwr${i + 1}`,
          timeScale: TIME_SCALE,
          state: "onboarded",
          storage: "lvm-thin",
          pve: { templates: [FIRST_TEMPLATE_VMID, FIRST_TEMPLATE_VMID + 1] },
        }),
        (started) => started.stop(),
      );
      secrets.add(`SSH password of ${node.name}`, node.ssh.password);
      return node;
    }),
  );
  return { ups, nodes };
}

/**
 * Creates something through the API and returns its id. The soak is under way while this runs:
 * a request whose answer was lost (a web server killed, the database paused) may still have
 * created it, so before giving up the soak looks for it, as a person would reload the page.
 */
async function created(
  what: string,
  create: () => Promise<ApiAnswer>,
  idOf: (body: Record<string, unknown>) => string,
  find: () => Promise<string | undefined>,
): Promise<string> {
  let last: ApiAnswer | null = null;
  for (let attempt = 0; attempt < 3; attempt++) {
    const found = attempt === 0 ? undefined : await find().catch(() => undefined);
    if (found) return found;
    last = await create();
    if (last.status === 201) return idOf(last.body as Record<string, unknown>);
  }
  throw new Error(`${what}: ${describeAnswer(last!)}`);
}

/**
 * Through the JSON API, as an operator and an admin would: each power node added as a host and
 * onboarded (its run creates the API token and pins the certificate a shutdown call needs), the
 * lab UPS added (NUT, with the console's user), each node protected with that UPS as its feed,
 * stage by stage, and a 30 s wait for a target to go down (the lab's nodes are off in seconds).
 * Every step survives a lost answer (a console that restarts a process is what the soak runs).
 */
export async function protectPowerFleet(
  ctx: Pick<SoakContext, "api" | "adminApi" | "secrets">,
  lab: Awaited<ReturnType<typeof startPowerLab>>,
): Promise<PowerFleet> {
  const listed = async <T>(path: string, key: string): Promise<T[]> => {
    const answer = await ctx.adminApi.get(path);
    return answer.status === 200 ? ((answer.body as Record<string, T[]>)[key] ?? []) : [];
  };
  const hostIds = await Promise.all(
    lab.nodes.map((node) =>
      created(
        `add ${node.name}`,
        () =>
          ctx.api.post("/api/hosts", {
            name: node.name,
            address: node.ssh.host,
            sshPort: node.ssh.port,
            apiPort: Number(new URL(node.api.url).port),
            sshUser: node.ssh.username,
            authMethod: "password",
            password: node.ssh.password,
          }),
        (body) => body.hostId as string,
        async () =>
          (
            await listed<{ id: string; name: string }>(
              `/api/hosts?q=${node.name}&limit=200`,
              "hosts",
            )
          ).find((h) => h.name === node.name)?.id,
      ),
    ),
  );
  const deadline = Date.now() + ACTIVE_WITHIN_MS;
  for (const [i, hostId] of hostIds.entries()) {
    for (;;) {
      const answer = await ctx.api.get(`/api/hosts/${hostId}`);
      const state = answer.status === 200 ? (answer.body as { state: string }).state : null;
      if (state === "active") break;
      if (state === "failed" || Date.now() > deadline) {
        throw new Error(
          `power host ${lab.nodes[i]!.name} is not active: ${describeAnswer(answer)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  for (const node of lab.nodes) {
    for (const [id, secret] of apiTokenSecretsOn(node)) {
      ctx.secrets.add(`Proxmox API token secret ${id} on ${node.name}`, secret);
    }
  }
  const nut = lab.ups.nut!;
  const upsId = await created(
    "add the lab UPS",
    () =>
      ctx.adminApi.post("/api/power/ups", {
        name: UPS_NAME,
        source: {
          type: "nut",
          host: nut.host,
          port: nut.port,
          upsName: nut.upsName,
          username: nut.username,
          password: nut.password,
        },
      }),
    (body) => (body.ups as { id: string }).id,
    async () =>
      (await listed<{ id: string; name: string }>("/api/power/ups", "ups")).find(
        (u) => u.name === UPS_NAME,
      )?.id,
  );
  const targets: PowerTarget[] = [];
  for (const [i, hostId] of hostIds.entries()) {
    const id = await created(
      `protect ${lab.nodes[i]!.name}`,
      () =>
        ctx.adminApi.post("/api/power/targets", {
          kind: "pve-node",
          hostId,
          feeds: [upsId],
          feedPolicy: "any",
          stage: i,
        }),
      (body) => (body.target as { id: string }).id,
      async () =>
        (await listed<{ id: string; hostId: string | null }>("/api/power/targets", "targets")).find(
          (t) => t.hostId === hostId,
        )?.id,
    );
    targets.push({ id, hostId, node: lab.nodes[i]! });
  }
  for (let attempt = 0; ; attempt++) {
    const settings = await ctx.adminApi.insist("PATCH", "/api/power/settings", {
      shutdown: { targetDownSeconds: 30 },
    });
    if (settings.status === 200) break;
    if (attempt === 2) throw new Error(`power settings: ${describeAnswer(settings)}`);
  }
  return { ups: lab.ups, upsId, targets };
}
