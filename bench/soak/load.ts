import type { HostSummary } from "@/lib/hosts/list-hosts";
import { describeAnswer, type ApiAnswer } from "./api";
import { choose, LOAD_ACTIONS, type LoadAction, type LoadEvent } from "./schedule";
import type { SoakContext } from "./soak-context";
import { FIRST_TEMPLATE_VMID, type SoakNode } from "./soak-lab";

/** done; refused (4xx); unavailable (still 503 after 20 s); unanswered; no target to act on. */
export type ActionCount = {
  done: number;
  refused: number;
  unavailable: number;
  unanswered: number;
  noTarget: number;
};

type Outcome =
  | { kind: "done"; detail: string }
  | { kind: "noTarget"; detail: string }
  | { kind: "refused" | "unavailable" | "unanswered"; detail: string };

const answered = (what: string, answer: ApiAnswer, ok: number[]): Outcome =>
  answer.status === null
    ? { kind: "unanswered", detail: `${what}: ${answer.error}` }
    : ok.includes(answer.status)
      ? { kind: "done", detail: `${what}: ${answer.status}` }
      : {
          kind: answer.status === 503 ? "unavailable" : "refused",
          detail: `${what}: ${describeAnswer(answer)}`,
        };

/**
 * The mixed load, through the JSON API as automation would drive it: every lab node added as a
 * host at the start (fresh ones onboard from Debian 13, onboarded ones only check), then at the
 * scheduled moments re-onboards, aborts, retries, decommissions and re-adds, new template
 * versions published (the next onboarding of each host builds them) and console-key rotations.
 * Targets come from GET /api/hosts, in name order, chosen by each event's `pick`.
 */
export function createLoad(ctx: SoakContext) {
  const counts = new Map<LoadAction | "add", ActionCount>(
    [...LOAD_ACTIONS, "add" as const].map((a) => [
      a,
      { done: 0, refused: 0, unavailable: 0, unanswered: 0, noTarget: 0 },
    ]),
  );
  /** Host id → the node it is, for every host the soak added. */
  const nodeOfHost = new Map<string, SoakNode>();
  const addsOf = new Map<SoakNode, number>();
  let planId: string | null = null;
  let nextVmid = FIRST_TEMPLATE_VMID;

  /** The soak's hosts (asking again while the console says 503, as ApiClient does). */
  const hosts = async (): Promise<HostSummary[] | null> => {
    const answer = await ctx.api.get("/api/hosts?limit=200&sort=name");
    if (answer.status !== 200) return null;
    return (answer.body as { hosts: HostSummary[] }).hosts.filter((h) => nodeOfHost.has(h.id));
  };

  /** Adds the node as a new host (name `<node>`, then `<node>-2`, … after each retirement). */
  async function addHost(entry: SoakNode): Promise<Outcome> {
    const { node } = entry;
    const count = (addsOf.get(entry) ?? 0) + 1;
    const name = count === 1 ? node.name : `${node.name}-${count}`;
    const credential = await credentialFor(entry);
    if ("error" in credential) return { kind: "refused", detail: credential.error };
    const answer = await ctx.api.post("/api/hosts", {
      name,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: Number(new URL(node.api.url).port),
      sshUser: node.ssh.username,
      ...credential,
    });
    const outcome = answered(`add ${name}`, answer, [201]);
    if (outcome.kind === "done") {
      addsOf.set(entry, count);
      nodeOfHost.set((answer as { body: { hostId: string } }).body.hostId, entry);
    }
    return outcome;
  }

  /** The credential fields of the add form; the console's key is installed first, as its page says. */
  async function credentialFor(
    entry: SoakNode,
  ): Promise<Record<string, string> | { error: string }> {
    if (entry.auth === "password")
      return { authMethod: "password", password: entry.node.ssh.password };
    if (entry.auth === "private_key")
      return { authMethod: "private_key", privateKey: entry.privateKey! };
    const answer = await ctx.api.get("/api/console-key");
    if (answer.status !== 200) return { error: `GET /api/console-key: ${describeAnswer(answer)}` };
    const { key } = answer.body as { key: { id: string; publicKey: string } };
    entry.node.authorizeKey(key.publicKey);
    return { authMethod: "console_key", consoleKeyId: key.id };
  }

  /** A new plan version with the next template VMID, published: every host now needs it. */
  async function publishTemplate(): Promise<Outcome> {
    if (planId === null) {
      const plan = await ctx.adminApi.post("/api/catalog/plans", { slug: "soak", name: "Soak" });
      if (plan.status !== 201) return answered("create plan", plan, [201]);
      planId = (plan.body as { planId: string }).planId;
    }
    const vmid = nextVmid;
    const version = await ctx.adminApi.post(`/api/catalog/plans/${planId}/versions`, {
      templateVmid: vmid,
      cores: 2,
      memoryMib: 2048,
      diskGib: 20,
    });
    if (version.status !== 201) return answered(`draft template ${vmid}`, version, [201]);
    const versionId = (version.body as { planVersionId: string }).planVersionId;
    const published = await ctx.adminApi.post(`/api/catalog/versions/${versionId}/publish`, {});
    const outcome = answered(`publish template ${vmid}`, published, [200]);
    if (outcome.kind === "done") nextVmid += 1;
    return outcome;
  }

  const actions: Record<LoadAction, (event: LoadEvent) => Promise<Outcome>> = {
    async reonboard(event) {
      const list = await hosts();
      if (!list) return { kind: "unanswered", detail: "GET /api/hosts failed" };
      const host = choose(
        list.filter(
          (h) => (h.state === "active" || h.state === "failed") && h.run?.status !== "running",
        ),
        event.pick,
      );
      if (!host) return { kind: "noTarget", detail: "no host at rest" };
      return answered(
        `onboard ${host.name} again`,
        await ctx.api.post(`/api/hosts/${host.id}/runs`),
        [201],
      );
    },
    async abort(event) {
      const list = await hosts();
      if (!list) return { kind: "unanswered", detail: "GET /api/hosts failed" };
      const host = choose(
        list.filter((h) => h.state === "onboarding" && h.run?.status === "running"),
        event.pick,
      );
      if (!host) return { kind: "noTarget", detail: "no onboarding running" };
      return answered(
        `abort ${host.name} at ${host.run!.currentStep}`,
        await ctx.api.post(`/api/runs/${host.run!.id}/abort`),
        [202],
      );
    },
    async retry(event) {
      const list = await hosts();
      if (!list) return { kind: "unanswered", detail: "GET /api/hosts failed" };
      const host = choose(
        list.filter((h) => h.state === "failed" && h.run?.status === "failed"),
        event.pick,
      );
      if (!host) return { kind: "noTarget", detail: "no failed run" };
      return answered(
        `retry ${host.name} at ${host.run!.failedStep}`,
        await ctx.api.post(`/api/runs/${host.run!.id}/retry`),
        [200],
      );
    },
    async decommission(event) {
      const list = await hosts();
      if (!list) return { kind: "unanswered", detail: "GET /api/hosts failed" };
      const inService = list.filter((h) => h.state !== "retired" && h.state !== "decommissioning");
      // Keep most of the fleet in service: the load needs hosts to work on.
      if (inService.length <= Math.ceil(ctx.nodes.length / 2)) {
        return { kind: "noTarget", detail: "too few hosts in service" };
      }
      const host = choose(inService, event.pick);
      if (!host) return { kind: "noTarget", detail: "no host in service" };
      return answered(
        `decommission ${host.name}`,
        await ctx.api.post(`/api/hosts/${host.id}/decommission`),
        [201],
      );
    },
    async readd(event) {
      const list = await hosts();
      if (!list) return { kind: "unanswered", detail: "GET /api/hosts failed" };
      const inService = new Set(
        list.filter((h) => h.state !== "retired").map((h) => nodeOfHost.get(h.id)),
      );
      const entry = choose(
        ctx.nodes.filter((n) => !inService.has(n)),
        event.pick,
      );
      if (!entry) return { kind: "noTarget", detail: "every node is a host in service" };
      return addHost(entry);
    },
    publishTemplate: () => publishTemplate(),
    async rotateConsoleKey() {
      return answered(
        "rotate the console key",
        await ctx.adminApi.post("/api/console-key/rotate"),
        [202],
      );
    },
  };

  async function record(action: LoadAction | "add", run: () => Promise<Outcome>) {
    const count = counts.get(action)!;
    let outcome: Outcome;
    try {
      outcome = await run();
    } catch (error) {
      outcome = { kind: "unanswered", detail: `the soak failed: ${(error as Error).message}` };
    }
    count[outcome.kind] += 1;
    ctx.log(`load ${action}: ${outcome.detail}`);
    return outcome;
  }

  return {
    counts,
    hostIds: () => [...nodeOfHost.keys()],
    /**
     * The first catalog: the template the onboarded nodes already have and one they lack, so
     * builds start at once beside a template that must survive them. Then every node as a host.
     */
    async begin() {
      for (let i = 0; i < 2; i++) {
        const published = await record("publishTemplate", publishTemplate);
        if (published.kind !== "done") throw new Error(`the first catalog: ${published.detail}`);
      }
      for (const entry of ctx.nodes) {
        const added = await record("add", () => addHost(entry));
        if (added.kind !== "done") throw new Error(`adding the lab nodes: ${added.detail}`);
      }
    },
    run: async (event: LoadEvent) => {
      await record(event.action, () => actions[event.action](event));
    },
  };
}
