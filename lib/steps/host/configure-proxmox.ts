import { createHash } from "node:crypto";
import { advance, fail, type Outcome, type Step } from "@/lib/pipeline/step";
import { sh } from "@/lib/ssh";
import { jobDir } from "./remote-job";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { visitShell } from "./visit-shell";
import { alreadyInPlace } from "./already-in-place";
import {
  ENSURE_IMAGE_STORAGE,
  ensureImageStorageScript,
  parseImageStorageResult,
  readTemplateLibrary,
} from "./image-storage";

export const BRIDGE = "vmbr0";
const INTERFACES = '"${CLUPILOT_HOST_ROOT:-}/etc/network/interfaces"';
const APPLY_DIR = jobDir("configure-network");
const SEPARATOR = "--clupilot--";

/**
 * The running network (`ip -j`, i.e. what ifupdown2 last applied), the configuration file,
 * whether ifupdown2 is there to apply it, and the result of an apply a dropped visit left.
 */
export const NETWORK_PROBE = [
  "ip -j -4 route show default",
  `echo ${SEPARATOR}`,
  "ip -j -4 addr show",
  `echo ${SEPARATOR}`,
  "ip -j link show",
  `echo ${SEPARATOR}`,
  `cat ${INTERFACES}`,
  `echo ${SEPARATOR}`,
  "command -v ifreload >/dev/null 2>&1 && echo ifreload=yes || echo ifreload=no",
  `echo ${SEPARATOR}`,
  `cat ${APPLY_DIR}/result 2>/dev/null; echo ${SEPARATOR}; cat ${APPLY_DIR}/ifreload.log 2>/dev/null; true`,
].join("\n");

type IpRoute = { dst?: string; dev?: string; gateway?: string };
type IpAddr = {
  ifname?: string;
  addr_info?: { family?: string; local?: string; prefixlen?: number; scope?: string }[];
};
type IpLink = { ifname?: string; master?: string };

export type NetworkFacts = {
  defaultDev: string | null;
  /** Global IPv4 addresses per interface (`192.0.2.10/24`). */
  addresses: Map<string, string[]>;
  /** Interfaces enslaved to each bridge. */
  ports: Map<string, string[]>;
  interfaces: string;
  ifreload: boolean;
  leftoverResult: string | null;
  leftoverLog: string;
};

export function parseNetworkProbe(stdout: string): NetworkFacts {
  const [route = "", addr = "", link = "", interfaces = "", tool = "", result = "", log = ""] =
    stdout.split(`${SEPARATOR}\n`);
  const json = <T>(text: string): T[] => {
    try {
      return JSON.parse(text || "[]") as T[];
    } catch {
      throw new Error(`ip -j printed something that is not JSON: ${text.slice(0, 200)}`);
    }
  };
  const addresses = new Map<string, string[]>();
  for (const entry of json<IpAddr>(addr)) {
    const list = (entry.addr_info ?? [])
      .filter((a) => a.family === "inet" && a.scope === "global" && a.local)
      .map((a) => `${a.local}/${a.prefixlen ?? 32}`);
    if (entry.ifname) addresses.set(entry.ifname, list);
  }
  const ports = new Map<string, string[]>();
  for (const entry of json<IpLink>(link)) {
    if (!entry.master || !entry.ifname) continue;
    ports.set(entry.master, [...(ports.get(entry.master) ?? []), entry.ifname]);
  }
  return {
    defaultDev: json<IpRoute>(route).find((r) => r.dst === "default" && r.dev)?.dev ?? null,
    addresses,
    ports,
    interfaces,
    ifreload: /ifreload=yes/.test(tool),
    leftoverResult: result.trim() || null,
    leftoverLog: log.trim(),
  };
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
 * Applies the network configuration from a detached script, so a channel that drops while
 * the uplink moves onto the bridge cannot stop it halfway: the new file goes in (when there is
 * one), `ifreload -a` applies it, and if ifreload refuses, the backup is put back and applied
 * again. The command waits (up to 2 min) for the script's result and prints it with the log.
 */
export function applyNetworkCommand(rewrite: { expectedSha256: string } | null): string {
  const script = [
    'f="$1"; d="$2"; mode="$3"',
    'if [ "$mode" = rewrite ]; then mv -f "$f.clupilot-new" "$f"; fi',
    'if ifreload -a > "$d/ifreload.log" 2>&1; then r=applied',
    'elif [ "$mode" = rewrite ]; then cp -p "$f.clupilot-bak" "$f"; ifreload -a >> "$d/ifreload.log" 2>&1; r=rolled-back',
    "else r=failed; fi",
    'printf \'%s\\n\' "$r" > "$d/result.tmp" && mv -f "$d/result.tmp" "$d/result"',
  ].join("\n");
  return [
    `f=${INTERFACES}; d=${APPLY_DIR}`,
    'mkdir -p "$d" || exit 1',
    'rm -f "$d/result" "$d/ifreload.log"',
    ...(rewrite === null
      ? ["mode=reload"]
      : [
          sh`if [ "$(sha256sum < "$f" | cut -d' ' -f1)" != ${rewrite.expectedSha256} ]; then echo changed; exit 3; fi`,
          'cat > "$f.clupilot-new" || exit 1',
          'chmod --reference="$f" "$f.clupilot-new" 2>/dev/null || chmod 644 "$f.clupilot-new"',
          'cp -p "$f" "$f.clupilot-bak" || exit 1',
          "mode=rewrite",
        ]),
    sh`nohup setsid bash -c ${script} clupilot-apply-network "$f" "$d" "$mode" < /dev/null > /dev/null 2>&1 &`,
    'i=0; while [ ! -s "$d/result" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done',
    `cat "$d/result" 2>/dev/null; echo ${SEPARATOR}; cat "$d/ifreload.log" 2>/dev/null`,
  ].join("\n");
}

/** Puts the backup back and applies it (verification failed after a successful ifreload). */
export const RESTORE_NETWORK = [
  `f=${INTERFACES}; d=${APPLY_DIR}`,
  'cp -p "$f.clupilot-bak" "$f" && ifreload -a',
].join("\n");

export const CLEAR_APPLY_RESULT = `rm -f ${APPLY_DIR}/result`;

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

/**
 * Goal: the host can run VMs. (1) A `vmbr0` Linux bridge on the host's primary interface (the
 * one carrying the default route) holds its address and gateway — a template with
 * `bridge=vmbr0` is useless without it. /etc/network/interfaces is rewritten keeping every other
 * stanza (the old file stays as `interfaces.clupilot-bak`), applied with `ifreload -a`, and
 * verified with `ip` afterwards; a rejected or unverifiable configuration is rolled back. An
 * existing live bridge is left alone. (2) A storage accepts disk images (image-storage.ts), so
 * RegisterCapacity finds room for VMs whether or not the catalog requires a template yet.
 */
export const configureProxmox: Step<HostServices> = {
  name: "ConfigureProxmox",
  maxDuration: () => 600,
  visit: (ctx) =>
    withPermanentSshFailures(async () => {
      const exec = visitShell(ctx);
      const bridge = await ensureBridge(exec);
      if (bridge.kind !== "held") return bridge;
      const storage = await ensureImageStorage(exec);
      if (storage.kind !== "held") return storage;
      const detail = `${bridge.detail}; ${storage.detail}`;
      return bridge.inPlace && storage.inPlace ? alreadyInPlace(ctx, detail) : advance(detail);
    }),
};

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

async function ensureBridge(exec: Exec): Promise<Held | Outcome> {
  const read = async () => {
    const probe = await exec(NETWORK_PROBE);
    if (probe.code !== 0)
      throw new Error(
        `reading the network configuration failed (exit ${probe.code}): ${probe.stderr.trim()}`,
      );
    return parseNetworkProbe(probe.stdout);
  };
  const facts = await read();
  const configured = bridgeConfigured(facts.interfaces);
  if (configured && bridgeApplied(facts))
    return {
      kind: "held",
      inPlace: true,
      detail: `${BRIDGE} configured and carries ${(facts.addresses.get(BRIDGE) ?? []).join(", ")}`,
    };

  // An apply whose visit was cut off ended in a rollback: report it instead of repeating it.
  if (facts.leftoverResult === "rolled-back" || facts.leftoverResult === "failed") {
    await exec(CLEAR_APPLY_RESULT);
    return fail(
      `ifreload -a refused the ${BRIDGE} configuration (the old one was restored): ${logTail(facts.leftoverLog)} — check that the host's kernel supports Linux bridges and that ${BRIDGE} is free, then Retry`,
    );
  }
  if (!facts.ifreload)
    return fail("ifreload (ifupdown2) is not installed; InstallProxmoxVe must succeed first");
  if (facts.defaultDev === null)
    return fail(
      "the host has no IPv4 default route, so its primary interface is unknown; configure its network and Retry",
    );

  let rewrite: { expectedSha256: string; content: string } | null = null;
  if (!configured) {
    const plan = bridgeInterfaces(facts.interfaces, facts.defaultDev);
    if ("refuse" in plan) return fail(plan.refuse);
    rewrite = {
      expectedSha256: createHash("sha256").update(facts.interfaces).digest("hex"),
      content: plan.content,
    };
  }
  const applied = await exec(applyNetworkCommand(rewrite), rewrite?.content, 180_000);
  if (applied.stdout.startsWith("changed"))
    throw new Error("/etc/network/interfaces changed while it was being read; reading it again");
  if (applied.code !== 0)
    throw new Error(
      `applying the network configuration failed (exit ${applied.code}): ${applied.stderr.trim()}`,
    );
  const [result = "", log = ""] = applied.stdout.split(`${SEPARATOR}\n`);
  if (result.trim() !== "applied") {
    await exec(CLEAR_APPLY_RESULT);
    return fail(
      result.trim() === "rolled-back"
        ? `ifreload -a refused the ${BRIDGE} configuration, so the old one was restored: ${logTail(log)} — check that the host's kernel supports Linux bridges and that ${BRIDGE} is free, then Retry`
        : result.trim() === "failed"
          ? `ifreload -a refused /etc/network/interfaces: ${logTail(log)}; fix the file and Retry`
          : "applying the network configuration gave no result within 2 minutes; check the host's console",
    );
  }
  await exec(CLEAR_APPLY_RESULT);

  const after = await read();
  if (bridgeApplied(after))
    return {
      kind: "held",
      inPlace: false,
      detail: `${BRIDGE} on ${facts.defaultDev} carries ${(after.addresses.get(BRIDGE) ?? []).join(", ")}`,
    };
  const what = `default route via ${after.defaultDev ?? "nothing"}, ${BRIDGE} addresses ${(after.addresses.get(BRIDGE) ?? []).join(", ") || "none"}, ports ${(after.ports.get(BRIDGE) ?? []).join(", ") || "none"}`;
  if (rewrite !== null) {
    const restored = await exec(RESTORE_NETWORK);
    return fail(
      `after ifreload, ${BRIDGE} is not live (${what}); the old configuration was ${restored.code === 0 ? "restored" : "NOT restored (restore /etc/network/interfaces.clupilot-bak by hand)"}`,
    );
  }
  return fail(
    `after ifreload, ${BRIDGE} is not live (${what}); check /etc/network/interfaces and Retry`,
  );
}
