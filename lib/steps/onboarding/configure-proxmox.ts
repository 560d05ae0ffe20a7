import { createHash } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { advance, fail, type Outcome, type Step, type StepContext } from "@/lib/pipeline/step";
import { SshChannelError, SshCommandTimeoutError, SshConnectError, sh } from "@/lib/ssh";
import { jobDir } from "../remote-job/remote-job";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { visitShell } from "../remote-job/visit-shell";
import { alreadyInPlace } from "../../pipeline/already-in-place";
import { readFirstLine, SHOW_FUNCTION } from "../remote-job/shell-read";
import {
  ENSURE_IMAGE_STORAGE,
  ensureImageStorageScript,
  parseImageStorageResult,
  readTemplateLibrary,
} from "./image-storage";

export const BRIDGE = "vmbr0";
const INTERFACES = "/etc/network/interfaces";
const APPLY_DIR = jobDir("configure-network");
const SEPARATOR = "--clupilot--";
/** Heads `systemctl is-active`'s two lines (timer, then service) in the probe's timer section. */
const UNITS_MARK = "units:";

/** The transient systemd unit (`.timer` and `.service`) that takes a network change back. */
export const ROLLBACK_UNIT = "clupilot-net-rollback";
/** Seconds the host waits for the console's confirmation before it takes the change back. */
export const DEFAULT_ROLLBACK_SECONDS = 120;

/**
 * The running network (`ip -j`, i.e. what ifupdown2 last applied), the configuration file,
 * whether ifupdown2 and systemd-run are there, the result of an apply a dropped visit left, and
 * the rollback timer: pending or not, its deadline on the host's clock, and what it did if it ran.
 *
 * Read up to four times a visit, so it starts few processes: one `ip addr` gives addresses and
 * bridge ports both (it prints each link's attributes, `master` among them, with its
 * addresses), one `systemctl is-active` answers for timer and service (a line each, in order),
 * and the small state files are read by the shell itself (`show`). The interfaces file stays a
 * `cat`: its exact bytes are what the change's checksum is taken over.
 */
export const NETWORK_PROBE = [
  SHOW_FUNCTION,
  "ip -j -4 route show default",
  `echo ${SEPARATOR}`,
  "ip -j addr show",
  `echo ${SEPARATOR}`,
  `cat ${INTERFACES}`,
  `echo ${SEPARATOR}`,
  "command -v ifreload >/dev/null 2>&1 && echo ifreload=yes || echo ifreload=no",
  "command -v systemd-run >/dev/null 2>&1 && echo systemd-run=yes || echo systemd-run=no",
  `echo ${SEPARATOR}`,
  `show ${APPLY_DIR}/result; echo ${SEPARATOR}; show ${APPLY_DIR}/ifreload.log`,
  `echo ${SEPARATOR}`,
  `echo ${UNITS_MARK}; systemctl is-active ${ROLLBACK_UNIT}.timer ${ROLLBACK_UNIT}.service 2>/dev/null`,
  "printf 'now='; date +%s",
  `${readFirstLine("deadline", `${APPLY_DIR}/rollback-deadline`)}; printf 'deadline=%s\\n' "$deadline"`,
  `echo ${SEPARATOR}`,
  `show ${APPLY_DIR}/rollback; echo ${SEPARATOR}; show ${APPLY_DIR}/rollback.log; true`,
].join("\n");

type IpRoute = { dst?: string; dev?: string; gateway?: string };
type IpAddr = {
  ifname?: string;
  /** The bridge (or bond) this link is a port of. */
  master?: string;
  addr_info?: { family?: string; local?: string; prefixlen?: number; scope?: string }[];
};

/** The rollback timer as the host reports it. */
export type RollbackFacts = {
  /** `systemctl is-active` of the timer and of its service. */
  timerActive: boolean;
  serviceActive: boolean;
  /** Seconds until the deadline the visit that set the timer wrote (host clock), or null. */
  secondsLeft: number | null;
  /** The line the rollback wrote when it ran (`<time> ifreload-exit=<n>`), or null. */
  ran: string | null;
  log: string;
};

export type NetworkFacts = {
  defaultDev: string | null;
  defaultGateway: string | null;
  /** Global IPv4 addresses per interface (`192.0.2.10/24`). */
  addresses: Map<string, string[]>;
  /** Interfaces enslaved to each bridge. */
  ports: Map<string, string[]>;
  interfaces: string;
  ifreload: boolean;
  systemdRun: boolean;
  leftoverResult: string | null;
  leftoverLog: string;
  rollback: RollbackFacts;
};

export function parseNetworkProbe(stdout: string): NetworkFacts {
  const [
    route = "",
    addr = "",
    interfaces = "",
    tool = "",
    result = "",
    log = "",
    timer = "",
    ran = "",
    rollbackLog = "",
  ] = stdout.split(`${SEPARATOR}\n`);
  const json = <T>(text: string): T[] => {
    try {
      return JSON.parse(text || "[]") as T[];
    } catch {
      throw new Error(`ip -j printed something that is not JSON: ${text.slice(0, 200)}`);
    }
  };
  const addresses = new Map<string, string[]>();
  const ports = new Map<string, string[]>();
  for (const entry of json<IpAddr>(addr)) {
    if (!entry.ifname) continue;
    addresses.set(
      entry.ifname,
      (entry.addr_info ?? [])
        .filter((a) => a.family === "inet" && a.scope === "global" && a.local)
        .map((a) => `${a.local}/${a.prefixlen ?? 32}`),
    );
    if (entry.master) ports.set(entry.master, [...(ports.get(entry.master) ?? []), entry.ifname]);
  }
  const field = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(timer)?.[1]?.trim() ?? "";
  // After the mark, the lines that are not `name=value` are systemctl's (none when it is missing).
  const timerLines = timer.split("\n");
  const unitsAt = timerLines.indexOf(UNITS_MARK);
  const [timerState = "", serviceState = ""] = (unitsAt < 0 ? [] : timerLines.slice(unitsAt + 1))
    .filter((line) => line !== "" && !line.includes("="))
    .map((line) => line.trim());
  const now = Number(field("now"));
  const deadline = Number(field("deadline"));
  const defaultRoute = json<IpRoute>(route).find((r) => r.dst === "default" && r.dev);
  return {
    defaultDev: defaultRoute?.dev ?? null,
    defaultGateway: defaultRoute?.gateway ?? null,
    addresses,
    ports,
    interfaces,
    ifreload: /ifreload=yes/.test(tool),
    systemdRun: /systemd-run=yes/.test(tool),
    leftoverResult: result.trim() || null,
    leftoverLog: log.trim(),
    rollback: {
      timerActive: timerState === "active",
      serviceActive: ["active", "activating", "reloading"].includes(serviceState),
      secondsLeft:
        field("deadline") !== "" && Number.isFinite(now) && Number.isFinite(deadline)
          ? deadline - now
          : null,
      ran: ran.trim() || null,
      log: rollbackLog.trim(),
    },
  };
}

/** What the running network looks like, in one line for the operator. */
export function describeNetwork(facts: NetworkFacts): string {
  const route =
    facts.defaultDev === null
      ? "no default route"
      : `default route via ${facts.defaultDev}${facts.defaultGateway ? ` (gateway ${facts.defaultGateway})` : ""}`;
  const names = [...new Set([...facts.addresses.keys(), BRIDGE])].filter((n) => n !== "lo");
  const addresses = names
    .filter((n) => n === BRIDGE || (facts.addresses.get(n) ?? []).length > 0)
    .map((n) => `${n} ${(facts.addresses.get(n) ?? []).join(", ") || "no address"}`);
  const ports = facts.ports.get(BRIDGE) ?? [];
  return `${route}; ${addresses.join("; ")}${ports.length > 0 ? ` (${BRIDGE} ports ${ports.join(", ")})` : ""}`;
}

/** vmbr0 carries the default route and an address, with a port enslaved: the bridge is live. */
export function bridgeApplied(facts: NetworkFacts): boolean {
  return (
    facts.defaultDev === BRIDGE &&
    (facts.addresses.get(BRIDGE) ?? []).length > 0 &&
    (facts.ports.get(BRIDGE) ?? []).length > 0
  );
}

/** One `iface` stanza of /etc/network/interfaces: its line range and option lines. */
export type Stanza = {
  name: string;
  family: string;
  method: string;
  /** Index of the `iface` line. */
  start: number;
  /** One past its last option line (comments and blanks after it belong to what follows). */
  end: number;
  options: string[];
};

const STANZA_START = /^(iface|auto|allow-\S+|source|source-directory|mapping|rename)\b/;

export function parseStanzas(text: string): Stanza[] {
  const lines = text.split("\n");
  const stanzas: Stanza[] = [];
  let current: Stanza | null = null;
  lines.forEach((raw, index) => {
    const line = raw.replace(/#.*$/, "").trim();
    if (!line) return;
    if (STANZA_START.test(line)) {
      current = null;
      const words = line.split(/\s+/);
      if (words[0] === "iface" && words.length >= 4) {
        current = {
          name: words[1]!,
          family: words[2]!,
          method: words[3]!,
          start: index,
          end: index + 1,
          options: [],
        };
        stanzas.push(current);
      }
      return;
    }
    if (current !== null) {
      const stanza: Stanza = current;
      stanza.options.push(line);
      stanza.end = index + 1;
    }
  });
  return stanzas;
}

/** The file already defines the bridge with a real port. */
export function bridgeConfigured(interfaces: string): boolean {
  return parseStanzas(interfaces).some(
    (s) =>
      s.name === BRIDGE &&
      s.family === "inet" &&
      s.options.some((o) => /^bridge[-_]ports\s+(?!none\b)\S+/.test(o)),
  );
}

/**
 * Moves the primary interface's configuration (address, gateway, everything else in its
 * stanzas, inet and inet6) onto a new `vmbr0` bridge with the interface as its port, as the
 * Proxmox installer lays it out; the interface becomes `manual` and leaves the `auto` lines.
 * Every other line stays as it was. Returns a refusal when the file does not configure the NIC.
 */
export function bridgeInterfaces(
  text: string,
  nic: string,
): { content: string } | { refuse: string } {
  const stanzas = parseStanzas(text);
  if (stanzas.some((s) => s.name === BRIDGE))
    return {
      refuse: `/etc/network/interfaces already defines ${BRIDGE}, but not as a live bridge on ${nic}; fix it by hand and Retry`,
    };
  const inet = stanzas.find((s) => s.name === nic && s.family === "inet");
  if (!inet)
    return {
      refuse: `${nic} (the interface of the default route) has no "iface ${nic} inet" stanza in /etc/network/interfaces (configured elsewhere?); set up ${BRIDGE} by hand and Retry`,
    };
  const inet6 = stanzas.filter((s) => s.name === nic && s.family === "inet6");
  const lines = text.split("\n");
  const optionLines = (s: Stanza) =>
    s.options.filter((o) => !/^bridge[-_]/.test(o)).map((o) => `\t${o}`);
  const bridge = [
    `iface ${nic} inet manual`,
    "",
    `auto ${BRIDGE}`,
    `iface ${BRIDGE} inet ${inet.method}`,
    ...optionLines(inet),
    `\tbridge-ports ${nic}`,
    "\tbridge-stp off",
    "\tbridge-fd 0",
    ...inet6.flatMap((s) => ["", `iface ${BRIDGE} inet6 ${s.method}`, ...optionLines(s)]),
  ];
  const out: string[] = [];
  const skip = new Set<number>();
  for (const s of inet6) for (let i = s.start; i < s.end; i++) skip.add(i);
  lines.forEach((line, index) => {
    if (index === inet.start) {
      out.push(...bridge);
      return;
    }
    if ((index > inet.start && index < inet.end) || skip.has(index)) return;
    const words = line.replace(/#.*$/, "").trim().split(/\s+/);
    if ((words[0] === "auto" || words[0]?.startsWith("allow-")) && words.includes(nic)) {
      const rest = words.slice(1).filter((w) => w !== nic);
      if (rest.length > 0) out.push(`${words[0]} ${rest.join(" ")}`);
      return;
    }
    out.push(line);
  });
  return { content: out.join("\n") };
}

/**
 * What the rollback timer runs on the host (as `<unit>.service`, outside any SSH session): puts
 * the saved file back, applies it, and leaves a line saying when and how ifreload ended.
 */
const ROLLBACK_SCRIPT = [
  'f="$1"; d="$2"',
  'cp -p "$f.clupilot-bak" "$f" || exit 1',
  'ifreload -a > "$d/rollback.log" 2>&1; rc=$?',
  'printf \'%s ifreload-exit=%s\\n\' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$rc" > "$d/rollback.tmp" && mv -f "$d/rollback.tmp" "$d/rollback"',
].join("\n");

/**
 * Prepares a change and arms its dead man's switch: checks the file is still the one read,
 * puts the new content next to it (`.clupilot-new`), saves the current one
 * (`.clupilot-bak`), and schedules the rollback with `systemd-run --on-active`. Nothing is
 * applied yet. Paths are expanded here: the timer's service does not inherit this shell's
 * environment.
 */
export function prepareNetworkCommand(expectedSha256: string, rollbackSeconds: number): string {
  const seconds = Math.round(rollbackSeconds);
  return [
    `f=${INTERFACES}; d=${APPLY_DIR}`,
    'mkdir -p "$d" || exit 1',
    'rm -f "$d/result" "$d/ifreload.log" "$d/rollback" "$d/rollback.log" "$d/rollback-deadline"',
    sh`if [ "$(sha256sum < "$f" | cut -d' ' -f1)" != ${expectedSha256} ]; then echo changed; exit 3; fi`,
    'cat > "$f.clupilot-new" || exit 1',
    'chmod --reference="$f" "$f.clupilot-new" 2>/dev/null || chmod 644 "$f.clupilot-new"',
    'cp -p "$f" "$f.clupilot-bak" || exit 1',
    `echo $(( $(date +%s) + ${seconds} )) > "$d/rollback-deadline" || exit 1`,
    sh`systemd-run --unit=${ROLLBACK_UNIT} --description=${`CluPilot: put back /etc/network/interfaces unless the console confirms ${BRIDGE}`} --on-active=${`${seconds}s`} --timer-property=AccuracySec=1s --collect /bin/sh -c ${ROLLBACK_SCRIPT} ${ROLLBACK_UNIT} "$f" "$d" || exit 5`,
    sh`echo ${`rollback timer ${ROLLBACK_UNIT}.timer set: in ${seconds} s the host puts interfaces.clupilot-bak back and runs ifreload -a, unless the console confirms ${BRIDGE} over a new SSH connection first`}`,
  ].join("\n");
}

/**
 * Applies the prepared file from a detached script, so the channel (and the console's
 * connection) may die with the old network without stopping it halfway: the new file goes in,
 * `ifreload -a` applies it, and if ifreload refuses, the backup is put back and applied again.
 * Returns at once; the result (`applied`, `rolled-back`, `failed`) is read over a NEW connection.
 */
export const APPLY_NETWORK = [
  `f=${INTERFACES}; d=${APPLY_DIR}`,
  sh`nohup setsid bash -c ${[
    'f="$1"; d="$2"',
    'mv -f "$f.clupilot-new" "$f"',
    'if ifreload -a > "$d/ifreload.log" 2>&1; then r=applied',
    'else cp -p "$f.clupilot-bak" "$f"; if ifreload -a >> "$d/ifreload.log" 2>&1; then r=rolled-back; else r=failed; fi; fi',
    'printf \'%s\\n\' "$r" > "$d/result.tmp" && mv -f "$d/result.tmp" "$d/result"',
  ].join("\n")} clupilot-apply-network "$f" "$d" < /dev/null > /dev/null 2>&1 &`,
  "echo applying",
].join("\n");

/**
 * Cancels the rollback and proves it: the timer stopped, its service not running, and no sign
 * that it ran. Prints `cancelled` or what was found instead (exit 6).
 */
export const CANCEL_ROLLBACK = [
  `d=${APPLY_DIR}`,
  `systemctl stop ${ROLLBACK_UNIT}.timer 2>/dev/null`,
  `t=$(systemctl is-active ${ROLLBACK_UNIT}.timer 2>/dev/null); s=$(systemctl is-active ${ROLLBACK_UNIT}.service 2>/dev/null)`,
  'if [ "$t" != active ] && [ "$s" != active ] && [ "$s" != activating ] && [ ! -e "$d/rollback" ]; then',
  '  rm -f "$d/rollback-deadline" "$d/result"',
  `  echo "cancelled: rollback timer ${ROLLBACK_UNIT}.timer stopped (timer $t, service $s); the host keeps ${BRIDGE}"`,
  "else",
  '  echo "not cancelled: timer $t, service $s, rollback $(cat "$d/rollback" 2>/dev/null || echo none)"; exit 6',
  "fi",
].join("\n");

/**
 * Verification failed after a successful ifreload while the console can still reach the host:
 * puts the backup back and applies it now instead of waiting for the timer, then stops the timer.
 */
export const RESTORE_NETWORK = [
  `f=${INTERFACES}; d=${APPLY_DIR}`,
  'cp -p "$f.clupilot-bak" "$f" && ifreload -a || exit 1',
  `systemctl stop ${ROLLBACK_UNIT}.timer 2>/dev/null`,
  'rm -f "$d/rollback-deadline"',
].join("\n");

/** Forgets an apply's result and a rollback's record once the operator has been told. */
export const CLEAR_APPLY_RESULT = `d=${APPLY_DIR}; rm -f "$d/result" "$d/rollback" "$d/rollback.log" "$d/rollback-deadline"`;

function logTail(log: string): string {
  return (
    log
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .slice(-3)
      .join(" ⏎ ") || "no output"
  );
}

type Exec = ReturnType<typeof visitShell>;
/** A part of the configuration that holds: `inPlace` when nothing had to change. */
type Held = { kind: "held"; inPlace: boolean; detail: string };

export type ConfigureProxmoxOptions = {
  /**
   * Seconds the host gives the console to confirm a network change over a new SSH connection
   * before it takes the change back by itself (5–300; the wait for the rollback must fit in the
   * step's 600 s).
   */
  rollbackSeconds?: number;
};

/**
 * Goal: the host can run VMs. (1) A `vmbr0` Linux bridge on the host's primary interface (the
 * one carrying the default route) holds its address and gateway — a template with
 * `bridge=vmbr0` is useless without it. /etc/network/interfaces is rewritten keeping every other
 * stanza (the old file stays as `interfaces.clupilot-bak`) and applied under a dead man's switch
 * (docs/decisions.md, "The network change takes itself back"): the host schedules its own
 * rollback, the console applies, reconnects and checks, and only then cancels the rollback. An
 * existing live bridge is left alone. (2) A storage accepts disk images (image-storage.ts), so
 * RegisterCapacity finds room for VMs whether or not the catalog requires a template yet.
 */
export function configureProxmoxStep(options: ConfigureProxmoxOptions = {}): Step<HostServices> {
  const rollbackSeconds = options.rollbackSeconds ?? DEFAULT_ROLLBACK_SECONDS;
  if (!Number.isInteger(rollbackSeconds) || rollbackSeconds < 5 || rollbackSeconds > 300)
    throw new Error(`rollbackSeconds must be a whole number from 5 to 300, got ${rollbackSeconds}`);
  return {
    name: "ConfigureProxmox",
    maxDuration: () => 600,
    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        const exec = visitShell(ctx);
        const bridge = await ensureBridge(ctx, exec, rollbackSeconds);
        if (bridge.kind !== "held") return bridge;
        const storage = await ensureImageStorage(exec);
        if (storage.kind !== "held") return storage;
        const detail = `${bridge.detail}; ${storage.detail}`;
        return bridge.inPlace && storage.inPlace ? alreadyInPlace(ctx, detail) : advance(detail);
      }),
  };
}

export const configureProxmox = configureProxmoxStep();

async function ensureImageStorage(exec: Exec): Promise<Held | Outcome> {
  const result = await exec(
    ENSURE_IMAGE_STORAGE,
    ensureImageStorageScript(await readTemplateLibrary()),
  );
  const verdict = parseImageStorageResult(result.code, result.stdout, result.stderr);
  switch (verdict.kind) {
    case "in-place":
      return { kind: "held", inPlace: true, detail: `${verdict.storage} accepts disk images` };
    case "added":
      return {
        kind: "held",
        inPlace: false,
        detail: `${verdict.storage} now accepts disk images (its other content types kept)`,
      };
    case "refused":
      return fail(verdict.reason);
  }
}

type Ctx = StepContext<HostServices>;

async function readNetwork(exec: Exec, timeoutMs?: number): Promise<NetworkFacts> {
  const probe = await exec(NETWORK_PROBE, undefined, timeoutMs);
  if (probe.code !== 0)
    throw new Error(
      `reading the network configuration failed (exit ${probe.code}): ${probe.stderr.trim()}`,
    );
  return parseNetworkProbe(probe.stdout);
}

async function ensureBridge(
  ctx: Ctx,
  exec: Exec,
  rollbackSeconds: number,
): Promise<Held | Outcome> {
  let facts = await readNetwork(exec);

  // A rollback timer an earlier visit set and never cancelled (that visit was cut short).
  if (pending(facts)) {
    if (!confirmable(facts))
      ctx.log(
        `an earlier visit's rollback timer is still pending${facts.rollback.secondsLeft === null ? "" : ` (due in ${Math.max(0, facts.rollback.secondsLeft)} s)`} and ${BRIDGE} is not confirmed live; waiting for that change's outcome or for the host to put its previous network back before changing anything`,
      );
    const settled = confirmable(facts)
      ? facts
      : await awaitHost(
          ctx,
          exec,
          Date.now() +
            ((facts.rollback.secondsLeft ?? rollbackSeconds) + graceSeconds(rollbackSeconds)) *
              1000,
          (f) => !pending(f) || confirmable(f),
        );
    if (settled === null)
      return fail(
        `the host did not finish the pending network rollback (timer ${ROLLBACK_UNIT}.timer) in time and no longer answers SSH; check it from its console — /etc/network/interfaces.clupilot-bak holds the previous configuration`,
      );
    if (confirmable(settled)) {
      ctx.log(
        `an earlier visit applied ${BRIDGE} and was cut short before confirming it; the rollback timer is still pending, so confirming over a new SSH connection`,
      );
      const confirmed = await confirmChange(ctx, exec, {
        before: null,
        confirmBy: Date.now() + Math.max(0, (settled.rollback.secondsLeft ?? 0) - 2) * 1000,
        rollbackSeconds,
      });
      if (confirmed.kind !== "held") return confirmed;
      return { ...confirmed, detail: `${confirmed.detail} (applied by an earlier visit)` };
    }
    facts = settled;
  }

  // The timer took a change back while no visit watched: say so, then start over.
  if (facts.rollback.ran !== null) {
    ctx.log(
      `the host put its previous network back by itself (${facts.rollback.ran}): an earlier visit applied ${BRIDGE} and did not confirm it in time; applying it again under a new rollback timer`,
    );
    await exec(CLEAR_APPLY_RESULT);
    facts = await readNetwork(exec);
  }

  const configured = bridgeConfigured(facts.interfaces);
  if (configured && bridgeApplied(facts))
    return {
      kind: "held",
      inPlace: true,
      detail: `${BRIDGE} configured and carries ${(facts.addresses.get(BRIDGE) ?? []).join(", ")}`,
    };

  // An apply whose visit was cut off ended in ifreload's refusal: report it instead of repeating it.
  if (facts.leftoverResult === "rolled-back" || facts.leftoverResult === "failed") {
    await exec(CLEAR_APPLY_RESULT);
    return fail(
      `ifreload -a refused the ${BRIDGE} configuration (the old one was restored): ${logTail(facts.leftoverLog)} — check that the host's kernel supports Linux bridges and that ${BRIDGE} is free, then Retry`,
    );
  }
  if (!facts.ifreload)
    return fail("ifreload (ifupdown2) is not installed; InstallProxmoxVe must succeed first");
  if (!facts.systemdRun)
    return fail(
      "systemd-run is missing, so the host cannot take a network change back by itself; the console changes the network only under that timer — install systemd (Debian's default) and Retry",
    );
  if (facts.defaultDev === null)
    return fail(
      "the host has no IPv4 default route, so its primary interface is unknown; configure its network and Retry",
    );
  if (configured)
    return fail(
      `/etc/network/interfaces already defines ${BRIDGE}, but the running network does not carry it (${describeNetwork(facts)}); the console applies only a change it can take back, and there is no earlier file to go back to: apply it from the host's console (ifreload -a) or remove the ${BRIDGE} stanzas, then Retry`,
    );

  const plan = bridgeInterfaces(facts.interfaces, facts.defaultDev);
  if ("refuse" in plan) return fail(plan.refuse);
  const prepared = await exec(
    prepareNetworkCommand(
      createHash("sha256").update(facts.interfaces).digest("hex"),
      rollbackSeconds,
    ),
    plan.content,
  );
  const armedAt = Date.now();
  if (prepared.stdout.startsWith("changed"))
    throw new Error("/etc/network/interfaces changed while it was being read; reading it again");
  if (prepared.code !== 0)
    throw new Error(
      `preparing the network change failed (exit ${prepared.code}): ${(prepared.stderr.trim() || prepared.stdout.trim()).split("\n").slice(-2).join(" ")}`,
    );
  const applied = await exec(APPLY_NETWORK);
  if (applied.code !== 0)
    throw new Error(
      `starting the network change failed (exit ${applied.code}): ${applied.stderr.trim()}; the rollback timer puts the old file back if it was already moved`,
    );
  ctx.log(
    `applying ${BRIDGE}; confirming over a new SSH connection (pinned host key) within ${rollbackSeconds} s, or the host takes the change back by itself`,
  );
  return confirmChange(ctx, exec, {
    before: facts,
    confirmBy: armedAt + (rollbackSeconds - confirmMargin(rollbackSeconds)) * 1000,
    rollbackSeconds,
  });
}

/** How long one look at the network over a new connection may take. */
const LOOK_TIMEOUT_MS = 20_000;

/** Seconds before the host's deadline the console stops trying to confirm. */
function confirmMargin(rollbackSeconds: number): number {
  return Math.min(5, Math.ceil(rollbackSeconds / 5));
}

/** Seconds after the host's deadline the console keeps trying to see the rollback's outcome. */
function graceSeconds(rollbackSeconds: number): number {
  return 60 + Math.ceil(rollbackSeconds / 2);
}

/** SSH failures that mean "the host does not answer (now)", as opposed to a refused login. */
function unreachable(error: unknown): boolean {
  return (
    error instanceof SshConnectError ||
    error instanceof SshChannelError ||
    error instanceof SshCommandTimeoutError
  );
}

/**
 * A new connection (the pinned key; a refused key or login still fails the step) and the
 * network read over it; null while the host does not answer.
 */
async function reconnectAndRead(ctx: Ctx, exec: Exec, readyTimeoutMs: number) {
  try {
    await ctx.services.reconnect(readyTimeoutMs);
    // A session the change stalls must not hold the confirmation past the host's deadline.
    return await readNetwork(exec, LOOK_TIMEOUT_MS);
  } catch (error) {
    if (unreachable(error)) return null;
    throw error;
  }
}

async function pause(ctx: Ctx, ms: number): Promise<void> {
  await delay(ms, undefined, { signal: ctx.signal });
}

/**
 * The confirmation: over new connections until `confirmBy`, wait for the apply's result and
 * check the bridge; only a live bridge cancels the rollback. Anything else leaves it to the
 * timer (or, when the console can still reach the host, takes the change back at once).
 */
async function confirmChange(
  ctx: Ctx,
  exec: Exec,
  plan: { before: NetworkFacts | null; confirmBy: number; rollbackSeconds: number },
): Promise<Held | Outcome> {
  // Only a connection opened after the result was written proves the network after the
  // change: an established session (or one opened while ifreload ran) may outlive a change that
  // refuses new ones. So once a look finds the result, one more new connection decides.
  if (Date.now() >= plan.confirmBy) {
    ctx.log(`the rollback is due before a confirmation could reach the host; waiting for it`);
    return rolledBackByHost(ctx, exec, plan, "too-late");
  }
  let seen: NetworkFacts | null = null;
  let resultSeen = false;
  let confirmed = false;
  while (Date.now() < plan.confirmBy) {
    const now = await reconnectAndRead(
      ctx,
      exec,
      Math.max(1000, Math.min(10_000, plan.confirmBy - Date.now())),
    );
    seen = now;
    if (now !== null && now.leftoverResult !== null) {
      confirmed = resultSeen;
      if (confirmed) break;
      resultSeen = true;
      continue;
    }
    await pause(ctx, now === null ? 1000 : 500);
  }
  if (!confirmed || seen === null) {
    const why = !resultSeen && seen !== null ? "no-result" : "cut-off";
    ctx.log(
      why === "cut-off"
        ? `no new SSH connection to the host within ${plan.rollbackSeconds} s of applying ${BRIDGE}; waiting for the host to take the change back by itself`
        : `ifreload -a gave no result within ${plan.rollbackSeconds} s; waiting for the host to take the change back by itself`,
    );
    return rolledBackByHost(ctx, exec, plan, why);
  }

  const result = seen.leftoverResult;
  if (result === "rolled-back" || result === "failed") {
    await exec(CANCEL_ROLLBACK);
    await exec(CLEAR_APPLY_RESULT);
    return fail(
      result === "rolled-back"
        ? `ifreload -a refused the ${BRIDGE} configuration, so the old one was restored: ${logTail(seen.leftoverLog)} — check that the host's kernel supports Linux bridges and that ${BRIDGE} is free, then Retry`
        : `ifreload -a refused /etc/network/interfaces and the saved file too: ${logTail(seen.leftoverLog)}; fix the file and Retry`,
    );
  }

  const problem = bridgeProblem(seen, plan.before);
  if (problem !== null) {
    const restored = await exec(RESTORE_NETWORK);
    await exec(CLEAR_APPLY_RESULT);
    return fail(
      `after ifreload, ${BRIDGE} is not live (${problem}; ${describeNetwork(seen)}); the old configuration was ${restored.code === 0 ? "restored" : "NOT restored (the rollback timer puts /etc/network/interfaces.clupilot-bak back)"}`,
    );
  }

  const cancel = await exec(CANCEL_ROLLBACK);
  if (cancel.code !== 0) {
    ctx.log(`the rollback could not be cancelled (${cancel.stdout.trim()}); waiting for it`);
    return rolledBackByHost(ctx, exec, plan, "too-late");
  }
  const addresses = (seen.addresses.get(BRIDGE) ?? []).join(", ");
  return {
    kind: "held",
    inPlace: false,
    detail: `${BRIDGE} on ${(seen.ports.get(BRIDGE) ?? []).join(", ")} carries ${addresses}, confirmed over a new SSH connection; rollback timer cancelled`,
  };
}

/**
 * Why the bridge does not count as live, or null: the default route goes through vmbr0 with
 * a port and an address, and (for a change this visit made) the primary interface's addresses
 * and gateway moved onto it.
 */
function bridgeProblem(after: NetworkFacts, before: NetworkFacts | null): string | null {
  if (!bridgeApplied(after)) return `default route, address or port missing on ${BRIDGE}`;
  if (before === null || before.defaultDev === null) return null;
  const onBridge = after.addresses.get(BRIDGE) ?? [];
  const missing = (before.addresses.get(before.defaultDev) ?? []).filter(
    (a) => !onBridge.includes(a),
  );
  if (missing.length > 0) return `${missing.join(", ")} did not move onto ${BRIDGE}`;
  if (before.defaultGateway !== null && after.defaultGateway !== before.defaultGateway)
    return `the default gateway is ${after.defaultGateway ?? "none"}, not ${before.defaultGateway}`;
  return null;
}

/**
 * Reconnects (again and again) until the pending rollback has run and nothing of it is left
 * running, or `giveUpAt`; returns what the host looks like then, or null if it never answered.
 */
/** A rollback timer is set, or its service is running. */
function pending(facts: NetworkFacts): boolean {
  return facts.rollback.timerActive || facts.rollback.serviceActive;
}

/** An earlier visit's change took, and its rollback has not started: it can still be confirmed. */
function confirmable(facts: NetworkFacts): boolean {
  return (
    facts.rollback.timerActive &&
    !facts.rollback.serviceActive &&
    facts.leftoverResult === "applied" &&
    bridgeConfigured(facts.interfaces) &&
    bridgeApplied(facts)
  );
}

/**
 * Looks at the host again and again (reconnecting while it does not answer) until `done` holds
 * or `giveUpAt`; returns what the host looks like then, or null if it never answered.
 */
async function awaitHost(
  ctx: Ctx,
  exec: Exec,
  giveUpAt: number,
  done: (facts: NetworkFacts) => boolean,
): Promise<NetworkFacts | null> {
  let connected = false;
  while (Date.now() < giveUpAt) {
    const now: NetworkFacts | null = connected
      ? await readNetwork(exec, LOOK_TIMEOUT_MS).catch((error: unknown) => {
          if (unreachable(error)) return null;
          throw error;
        })
      : await reconnectAndRead(ctx, exec, Math.max(1000, Math.min(10_000, giveUpAt - Date.now())));
    connected = now !== null;
    if (now !== null && done(now)) return now;
    await pause(ctx, 1000);
  }
  return null;
}

async function rolledBackByHost(
  ctx: Ctx,
  exec: Exec,
  plan: { confirmBy: number; rollbackSeconds: number },
  why: "cut-off" | "no-result" | "too-late",
): Promise<Outcome> {
  const deadline = plan.confirmBy + confirmMargin(plan.rollbackSeconds) * 1000;
  const now = await awaitHost(
    ctx,
    exec,
    deadline + graceSeconds(plan.rollbackSeconds) * 1000,
    (f) => !pending(f),
  );
  const cause =
    why === "cut-off"
      ? `the console could not open a new SSH connection to the host within ${plan.rollbackSeconds} s of applying ${BRIDGE} (the change cut it off)`
      : why === "no-result"
        ? `ifreload -a did not finish within ${plan.rollbackSeconds} s`
        : `the host's rollback was due before the console could confirm ${BRIDGE}`;
  if (now === null)
    return fail(
      `${cause}, and the host has not answered SSH since, ${graceSeconds(plan.rollbackSeconds)} s after its rollback was due; check it from its console — /etc/network/interfaces.clupilot-bak holds the previous configuration`,
    );
  await exec(CLEAR_APPLY_RESULT);
  if (now.rollback.ran === null)
    return fail(
      `${cause}; the host answers again but shows no sign that its rollback ran: now ${describeNetwork(now)} — check /etc/network/interfaces against interfaces.clupilot-bak, then Retry`,
    );
  return fail(
    `${cause}, so the host put its previous network back by itself (${now.rollback.ran}): now ${describeNetwork(now)} — check that ${BRIDGE} can carry the address on this network (the uplink, the hoster's MAC filter), then Retry`,
  );
}
