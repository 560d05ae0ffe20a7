/*
 * The console's identity on a Proxmox node and the privileges it holds there: Proxmox facts
 * (PVE 9's privilege names and the paths its API checks them on) that onboarding grants
 * (CreateApiToken), onboarding verifies (VerifyProxmoxApi) and power's self-test checks.
 */

/** The console's own Proxmox identity: a user without a password, used only through its token. */
export const CONSOLE_USER = "clupilot@pve";
export const CONSOLE_ROLE = "CluPilot";
export const CONSOLE_TOKEN_NAME = "console";
export const CONSOLE_TOKEN_ID = `${CONSOLE_USER}!${CONSOLE_TOKEN_NAME}`;

/**
 * Exactly the privileges the console's features need, each with the path its feature checks
 * and what it is for. All exist on PVE 9 (no `VM.Monitor`: PVE 9 rejects a role naming it).
 * Templates are built over SSH as root, so no `VM.Allocate`/`VM.Config.*` is needed here.
 * `{node}` stands for the host's node name.
 */
export const CONSOLE_PRIVILEGES = [
  {
    privilege: "VM.Audit",
    path: "/vms",
    purpose: "template checks: list VMs and read their configs (VerifyVmTemplate, pre-sale check)",
  },
  {
    privilege: "Sys.Audit",
    path: "/nodes/{node}",
    purpose: "node status and capacity: CPU and memory (RegisterCapacity), cluster and HA status",
  },
  {
    privilege: "Datastore.Audit",
    path: "/storage",
    purpose: "storage capacity: which storages take disk images and their size (RegisterCapacity)",
  },
  {
    privilege: "Sys.PowerMgmt",
    path: "/nodes/{node}",
    purpose:
      "power: shut the node down (POST /nodes/{node}/status) and wake another member of its cluster (POST /nodes/{node}/wakeonlan)",
  },
  {
    privilege: "VM.PowerMgmt",
    path: "/vms",
    purpose: "power: shut guests down before the node (guest shutdown, stopall)",
  },
  {
    privilege: "Sys.Modify",
    path: "/",
    purpose: "power: set and clear Ceph flags such as noout around a shutdown",
  },
  {
    privilege: "Sys.Console",
    path: "/",
    purpose: "power: disarm and re-arm HA around a shutdown (PVE 9.2+)",
  },
  {
    privilege: "VM.Migrate",
    path: "/vms",
    purpose:
      "power: consolidate a cluster onto one node at the first threshold (POST …/{qemu|lxc}/{vmid}/migrate)",
  },
] as const;

export const CONSOLE_PRIVILEGE_NAMES: readonly string[] = CONSOLE_PRIVILEGES.map(
  (p) => p.privilege,
);

export type RequiredPrivilege = { privilege: string; path: string; purpose: string };

/** CONSOLE_PRIVILEGES with `{node}` filled in: where each feature's check happens. */
export function requiredPrivileges(node: string): RequiredPrivilege[] {
  return CONSOLE_PRIVILEGES.map((p) => ({ ...p, path: p.path.replace("{node}", node) }));
}

/**
 * Which required privileges the token does not hold, from `GET /access/permissions?path=…`
 * answers (`{ "<path>": { "<Priv>": 0|1 } }`). The number is the propagate flag, not whether
 * the privilege is granted: the key's presence is the grant.
 */
export function missingPrivileges(
  required: readonly RequiredPrivilege[],
  answers: ReadonlyMap<string, Readonly<Record<string, Readonly<Record<string, number>>>>>,
): RequiredPrivilege[] {
  return required.filter((r) => {
    const atPath = answers.get(r.path)?.[r.path];
    return !atPath || !Object.hasOwn(atPath, r.privilege);
  });
}
