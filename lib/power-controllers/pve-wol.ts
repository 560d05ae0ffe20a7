import {
  ProxmoxAuthError,
  ProxmoxCertificateMismatchError,
  ProxmoxPermissionError,
  ProxmoxUnavailableError,
} from "@/lib/proxmox/errors";

import type { PowerController, PowerOnResult, PowerReading } from "./controller";

/** One other member of the host's cluster, with what asks its API. */
export type WolMember = {
  name: string;
  wakeOnLan(node: string): Promise<string>;
  wakeOnLanConfig(node: string): Promise<string | undefined>;
};

/** What to enter on the node for Proxmox to know its MAC (pvenode(1), `wakeonlan`). */
export const SET_WAKEONLAN = (node: string) =>
  `set it on ${node}: \`pvenode config set --wakeonlan <MAC of its NIC>\` (or \`wakeonlan: mac=…\` in /etc/pve/nodes/${node}/config), and enable Wake-on-LAN in its firmware and on the NIC (\`ethtool -s <nic> wol g\`)`;

/** Proxmox's own words when the node's config has no MAC (PVE/API2/Nodes.pm, `wakeonlan`). */
const NO_MAC = /No wake on LAN MAC address defined/;

/** The MAC of a `wakeonlan` property string: `mac=` or the default key (PVE/NodeConfig.pm). */
export function macOfWakeOnLan(value: string): string | null {
  for (const part of value.split(",")) {
    const [key, val] = part.includes("=") ? part.split("=", 2) : ["mac", part];
    if (key?.trim() === "mac" && val && /^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$/.test(val.trim()))
      return val.trim().toLowerCase();
  }
  return null;
}

/**
 * Wake-on-LAN through Proxmox: `POST /nodes/{node}/wakeonlan` asked of another member of the
 * node's cluster whose API answers — never of the node itself (Proxmox refuses "cannot wake my
 * self", and a node that is off answers nothing). The member sends the magic packet for the MAC
 * in the node's config, on its own network: the console needs no route to the node's LAN. Like
 * any Wake-on-LAN it cannot read a power state nor tell whether the packet woke the machine.
 *
 * A member that gives no answer (refused, silent, a proxy error) hands over to the next; an
 * answer that says what is wrong (no MAC configured, a refused token, a missing privilege)
 * stops there, naming what to fix — another member would answer the same.
 */
export function pveWolController(options: {
  node: string;
  /** The other members, in the order to try; resolved at use (their tokens unsealed then). */
  members: () => Promise<WolMember[]>;
}): PveWolController {
  const { node } = options;
  const where = `Wake-on-LAN for ${node} through its cluster (POST /nodes/${node}/wakeonlan)`;

  /** Runs `ask` on the first member that answers; the reasons of those that did not. */
  const first = async <T>(
    ask: (member: WolMember) => Promise<T>,
  ): Promise<
    { ok: true; member: string; value: T } | { ok: false; error: unknown; silent: string[] }
  > => {
    const members = await options.members();
    const silent: string[] = [];
    for (const member of members) {
      try {
        return { ok: true, member: member.name, value: await ask(member) };
      } catch (error) {
        if (noAnswer(error)) {
          silent.push(`${member.name}: ${message(error)}`);
          continue;
        }
        return { ok: false, error, silent };
      }
    }
    return { ok: false, error: null, silent };
  };

  const failed = (
    error: unknown,
    silent: string[],
  ): { problem: "unreachable" | "credentials" | "certificate" | "answer"; reason: string } => {
    if (error === null)
      return {
        problem: "unreachable",
        reason:
          silent.length === 0
            ? `${where}: ${node}'s cluster has no other member the console manages (onboarded, with its API token): add one, or use a BMC or Wake-on-LAN with a broadcast address.`
            : `${where}: no other member of the cluster answers its API (${silent.join("; ")}); the packet must come from a member that is up.`,
      };
    if (error instanceof ProxmoxAuthError || error instanceof ProxmoxPermissionError)
      return {
        problem: "credentials",
        reason: `${where}: ${message(error)} — the console's token needs Sys.PowerMgmt on /nodes/${node} (the console's role has it; check the token's ACL).`,
      };
    if (error instanceof ProxmoxCertificateMismatchError)
      return { problem: "certificate", reason: `${where}: ${error.message}` };
    if (NO_MAC.test(message(error)))
      return {
        problem: "answer",
        reason: `${where}: Proxmox knows no Wake-on-LAN MAC for ${node}; ${SET_WAKEONLAN(node)}.`,
      };
    return { problem: "answer", reason: `${where}: ${message(error)}` };
  };

  return {
    kind: "pve-wol",
    where,
    readPowerState(): Promise<PowerReading> {
      return Promise.resolve({
        state: "unknown",
        problem: "unsupported",
        reason: `${where} cannot read a power state; whether the host is up is for its API to say.`,
      });
    },
    async powerOn(): Promise<PowerOnResult> {
      const sent = await first((member) => member.wakeOnLan(node));
      if (!sent.ok) return { sent: false, ...failed(sent.error, sent.silent) };
      return {
        sent: true,
        detail: `${sent.member} sent the magic packet for ${node} (MAC ${sent.value}; POST /nodes/${node}/wakeonlan)`,
      };
    },
    /** The node's `wakeonlan` setting as Proxmox has it, read through a member that answers. */
    async readWakeOnLanConfig(): Promise<WakeOnLanConfigReading> {
      const read = await first((member) => member.wakeOnLanConfig(node));
      if (!read.ok) return { ok: false, ...failed(read.error, read.silent) };
      const mac = read.value === undefined ? null : macOfWakeOnLan(read.value);
      if (mac === null)
        return {
          ok: false,
          problem: "answer",
          reason: `${node} has no Wake-on-LAN MAC in its Proxmox config; ${SET_WAKEONLAN(node)}.`,
        };
      return {
        ok: true,
        mac,
        detail: `${node}'s config has wakeonlan ${read.value} (read through ${read.member})`,
      };
    },
  };
}

export type PveWolController = PowerController & {
  readonly kind: "pve-wol";
  readWakeOnLanConfig(): Promise<WakeOnLanConfigReading>;
};

export function isPveWol(controller: PowerController): controller is PveWolController {
  return controller.kind === "pve-wol";
}

export type WakeOnLanConfigReading =
  | { ok: true; mac: string; detail: string }
  | {
      ok: false;
      problem: "unreachable" | "credentials" | "certificate" | "answer";
      reason: string;
    };

/** No answer from this member: refused, silent, cut, or a proxy's 5xx that is not Proxmox's own. */
function noAnswer(error: unknown): boolean {
  if (!(error instanceof ProxmoxUnavailableError)) return false;
  if (error.status === undefined) return true;
  // Proxmox's own `die` in the handler is a 500 with its message: an answer.
  return error.status >= 500 && error.status !== 500 && error.status !== 501;
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
