import { and, asc, eq, isNull } from "drizzle-orm";

import type { Database } from "@/lib/db/client";
import { hosts, powerControllers, powerTargets } from "@/lib/db/schema";
import { safeErrorSummary } from "@/lib/errors";
import type { PowerReading } from "@/lib/power-controllers/controller";
import { isPveWol, type PveWolController } from "@/lib/power-controllers/pve-wol";
import { loadPowerController, loadTargetPowerController } from "@/lib/power-controllers/store";
import type { PowerController } from "@/lib/power-controllers/controller";
import { apiBaseUrl, probeApi } from "@/lib/proxmox/pinned-https";

import { checksOf, type SelfTestCheck } from "./verdict";

/**
 * Each host's and backup server's out-of-band power controller (lib/power-controllers), as the way back after an
 * outage will need it: it answers, it accepts the console's user and password, and it reads the
 * power state — On for a host whose Proxmox API (a backup server: its API on 8007) answers (a controller reading Off then is
 * another machine's). Each failure names what to fix. Nothing is switched: Wake-on-LAN, which
 * can only wake, is not sent.
 */
export async function checkPowerControllers(
  db: Database,
  options: { timeoutMs: number },
): Promise<SelfTestCheck[]> {
  const rows = await db
    .select({ host: hosts })
    .from(powerControllers)
    .innerJoin(hosts, eq(hosts.id, powerControllers.hostId))
    .where(isNull(hosts.retiredAt))
    .orderBy(hosts.name);
  // A backup server's controller hangs on its power target (it has no host row).
  const servers = await db
    .select({ target: powerTargets })
    .from(powerControllers)
    .innerJoin(
      powerTargets,
      and(eq(powerTargets.id, powerControllers.targetId), eq(powerTargets.kind, "pbs")),
    )
    .orderBy(asc(powerTargets.name));
  const owners: Owner[] = [
    ...rows.map(({ host }) => hostOwner(db, host)),
    ...servers.map(({ target }) => pbsOwner(db, target)),
  ];
  // A few at a time: each IPMI check is an ipmitool process, and a fleet may have hundreds.
  const perHost: SelfTestCheck[][] = new Array(owners.length);
  let next = 0;
  const lane = async () => {
    while (next < owners.length) {
      const at = next++;
      perHost[at] = await checkHost(owners[at]!, options);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_CONTROLLERS, owners.length) }, lane));
  return perHost.flat();
}

/** Whose controller is checked: a host's or a backup server's, and how to ask its own API. */
type Owner = {
  id: string;
  name: string;
  /** Where the admin fixes it. */
  page: string;
  /** Its own API, as messages name it. */
  api: string;
  load(timeoutMs: number): Promise<{ controller: PowerController } | null>;
  /** Whether its own API answers; null when there is none pinned to ask. */
  apiAnswers(timeoutMs: number): Promise<boolean | null>;
};

function hostOwner(db: Database, host: Host): Owner {
  return {
    id: host.id,
    name: host.name,
    page: "the host's page (Power controller)",
    api: "the host's Proxmox API",
    load: (timeoutMs) => loadPowerController(db, host.id, { timeoutMs }),
    apiAnswers: (timeoutMs) => hostApiAnswers(host, timeoutMs),
  };
}

function pbsOwner(db: Database, target: typeof powerTargets.$inferSelect): Owner {
  return {
    id: target.id,
    name: target.name ?? target.id,
    page: "/power/targets (the backup server's power controller)",
    api: "the backup server's API",
    load: (timeoutMs) => loadTargetPowerController(db, target.id, { timeoutMs }),
    apiAnswers: async (timeoutMs) => {
      if (!target.address || !target.port || !target.certSha256) return null;
      const probe = await probeApi({
        baseUrl: apiBaseUrl(target.address, target.port),
        certSha256: target.certSha256,
        timeoutMs,
      });
      return probe.answers;
    },
  };
}

const PARALLEL_CONTROLLERS = 8;

const BY_HAND =
  "Test it once by hand: shut the host down, send the packet (or use the BMC), and check that it boots; keep Wake-on-LAN enabled in its firmware and on its NIC (ethtool -s <nic> wol g).";

/**
 * Wake-on-LAN through the cluster: Proxmox must know the node's MAC (its `wakeonlan` setting,
 * read through a member that answers) — without it every wake is refused. The wake itself, as
 * any Wake-on-LAN, cannot be tested without the host off.
 */
async function checkPveWol(
  controller: PveWolController,
  check: ReturnType<typeof checksOf>,
  page: string,
): Promise<SelfTestCheck[]> {
  const config = check("power-controller-wakeonlan", "Proxmox knows its Wake-on-LAN MAC");
  const wake = check("power-controller-state", "its power controller reads the power state");
  const read = await controller.readWakeOnLanConfig();
  const found = read.ok
    ? config("ok", `${read.detail}.`)
    : read.problem === "unreachable"
      ? config(
          "could-not-check",
          read.reason,
          "Bring a member of the cluster up, or check that the console reaches its API.",
        )
      : config(
          "failed",
          read.reason,
          read.problem === "answer"
            ? null
            : `Check the console's API token on ${page}'s cluster members.`,
        );
  return [
    found,
    wake(
      "warning",
      `${controller.where} can wake the host but not be tested without waking it, nor read its power state.`,
      BY_HAND,
    ),
  ];
}

type Host = typeof hosts.$inferSelect;
const FIX = "Fix the controller's reachability check first.";

async function checkHost(owner: Owner, options: { timeoutMs: number }): Promise<SelfTestCheck[]> {
  const check = checksOf({ id: owner.id, name: owner.name });
  const reach = check("power-controller-reach", "its power controller answers");
  const login = check("power-controller-login", "its power controller accepts the console's login");
  const state = check("power-controller-state", "its power controller reads the power state");
  const page = owner.page;

  let reading: PowerReading;
  let where: string;
  let kind: string;
  try {
    const loaded = await owner.load(options.timeoutMs);
    if (!loaded) return [];
    if (isPveWol(loaded.controller)) return await checkPveWol(loaded.controller, check, page);
    where = loaded.controller.where;
    kind = loaded.controller.kind;
    reading = await loaded.controller.readPowerState();
  } catch (error) {
    return [
      reach(
        "failed",
        `Its power controller could not be loaded: ${safeErrorSummary(error)}.`,
        `Enter the controller again on ${page}.`,
      ),
    ];
  }

  if (kind === "wol") {
    return [
      state(
        "warning",
        `${where} can wake the host but not be tested without waking it, nor read its power state: whether a packet arrives shows only when the host is off.`,
        BY_HAND,
      ),
    ];
  }

  if (reading.state === "unknown") {
    switch (reading.problem) {
      case "unreachable":
        return [
          reach(
            "failed",
            reading.reason,
            `Check the BMC's address and port on ${page}, that it is powered (it runs on standby power) and that the console's machine reaches it (${kind === "ipmi" ? "UDP" : "TCP"} port; BMC networks are often a separate VLAN).`,
          ),
          login("could-not-check", "Not asked: the controller did not answer.", FIX),
          state("could-not-check", "Not asked: the controller did not answer.", FIX),
        ];
      case "certificate":
        return [
          reach(
            "failed",
            reading.reason,
            `If the BMC's certificate was renewed, save the controller again on ${page} (with a new address or port it pins afresh); otherwise find out what answers at that address.`,
          ),
          login("could-not-check", "Not asked: the console did not send the password.", FIX),
          state("could-not-check", "Not asked: the console did not send the password.", FIX),
        ];
      case "credentials":
        return [
          reach("ok", `${where} answered.`),
          login(
            "failed",
            reading.reason,
            `Correct the user or password on ${page}; the BMC user needs the Operator or Administrator role${kind === "ipmi" ? " and IPMI over LAN enabled" : ""}.`,
          ),
          state("could-not-check", "Not asked: the login was refused.", "Fix the login first."),
        ];
      default:
        return [
          reach("ok", `${where} answered.`),
          login("ok", `${where} accepted the login.`),
          state(
            "failed",
            reading.reason,
            kind === "redfish"
              ? `Check the system id on ${page} (GET /redfish/v1/Systems on the BMC lists them).`
              : `Check that the BMC supports chassis power commands for this user (ipmitool chassis power status).`,
          ),
        ];
    }
  }

  const answers = await owner.apiAnswers(options.timeoutMs);
  const reached = reach("ok", `${where} answered.`);
  const loggedIn = login("ok", `${where} accepted the console's login.`);
  if (reading.state === "on") {
    return [
      reached,
      loggedIn,
      answers === false
        ? state(
            "warning",
            `${reading.detail}, but ${owner.api} does not answer: the host may be hanging or booting, or the controller belongs to another machine.`,
            "Check the host; if it runs, check that the controller's address is this host's BMC.",
          )
        : state("ok", `${reading.detail}.`),
    ];
  }
  return [
    reached,
    loggedIn,
    answers === true
      ? state(
          "failed",
          `${reading.detail} while ${owner.api} answers: this controller belongs to another machine (or, for Redfish, another system).`,
          `Enter its own BMC on ${page} (its address${kind === "redfish" ? " and system id" : ""}).`,
        )
      : state(
          "warning",
          `${reading.detail}: the host is off (its API does not answer either).`,
          "Power it on if it should run.",
        ),
  ];
}

/** Whether the host's Proxmox API answers at all; null when it has no pinned API yet. */
async function hostApiAnswers(host: Host, timeoutMs: number): Promise<boolean | null> {
  if (!host.apiCertSha256) return null;
  const probe = await probeApi({
    baseUrl: apiBaseUrl(host.address, host.apiPort),
    certSha256: host.apiCertSha256,
    timeoutMs,
  });
  return probe.answers;
}
