import { randomUUID } from "node:crypto";
import fs from "node:fs";

import { tokenCfgPath, userCfgPath, writeAtomic } from "./state";

/**
 * Users, tokens, roles and ACLs in `etc/pve/user.cfg` (pve-access-control's format):
 *
 *     user:<userid>:<enable>:<expire>:<firstname>:<lastname>:<email>:<comment>:<keys>:
 *     token:<userid>!<tokenid>:<expire>:<privsep>:<comment>:
 *     role:<roleid>:<priv>,<priv>,…:
 *     acl:<propagate>:<path>:<user|@group|token>,…:<role>,…:
 *
 * Token secrets live in `etc/pve/priv/token.cfg` (`<userid>!<tokenid> <uuid>` per line).
 * Effective privileges follow Proxmox: the most specific path with an ACL for the subject wins,
 * `propagate=0` ACLs apply only to their own path, `root@pam` has everything; a token with
 * privilege separation gets its own ACLs intersected with its user's, without it its user's.
 */

/** Privileges that exist on PVE 9 (pve-access-control `PVE::AccessControl` priv list). */
export const PVE9_PRIVILEGES = [
  "Datastore.Allocate",
  "Datastore.AllocateSpace",
  "Datastore.AllocateTemplate",
  "Datastore.Audit",
  "Group.Allocate",
  "Mapping.Audit",
  "Mapping.Modify",
  "Mapping.Use",
  "Permissions.Modify",
  "Pool.Allocate",
  "Pool.Audit",
  "Realm.Allocate",
  "Realm.AllocateUser",
  "SDN.Allocate",
  "SDN.Audit",
  "SDN.Use",
  "Sys.AccessNetwork",
  "Sys.Audit",
  "Sys.Console",
  "Sys.Incoming",
  "Sys.Modify",
  "Sys.PowerMgmt",
  "Sys.Syslog",
  "User.Modify",
  "VM.Allocate",
  "VM.Audit",
  "VM.Backup",
  "VM.Clone",
  "VM.Config.CDROM",
  "VM.Config.CPU",
  "VM.Config.Cloudinit",
  "VM.Config.Disk",
  "VM.Config.HWType",
  "VM.Config.Memory",
  "VM.Config.Network",
  "VM.Config.Options",
  "VM.Console",
  "VM.GuestAgent.Audit",
  "VM.GuestAgent.FileRead",
  "VM.GuestAgent.FileSystemMgmt",
  "VM.GuestAgent.FileWrite",
  "VM.GuestAgent.Unrestricted",
  "VM.Migrate",
  "VM.PowerMgmt",
  "VM.Replicate",
  "VM.Snapshot",
  "VM.Snapshot.Rollback",
] as const;

const VALID = new Set<string>(PVE9_PRIVILEGES);

const VM_PRIVS = PVE9_PRIVILEGES.filter((p) => p.startsWith("VM."));

/** Built-in roles (a subset; not stored in user.cfg, like on a real node). */
export const BUILTIN_ROLES: Record<string, string[]> = {
  Administrator: [...PVE9_PRIVILEGES],
  NoAccess: [],
  PVEAdmin: PVE9_PRIVILEGES.filter(
    (p) => !["Permissions.Modify", "Realm.Allocate", "Sys.Modify"].includes(p),
  ),
  PVEAuditor: [
    "Datastore.Audit",
    "Mapping.Audit",
    "Pool.Audit",
    "SDN.Audit",
    "Sys.Audit",
    "VM.Audit",
    "VM.GuestAgent.Audit",
  ],
  PVEDatastoreAdmin: [
    "Datastore.Allocate",
    "Datastore.AllocateSpace",
    "Datastore.AllocateTemplate",
    "Datastore.Audit",
  ],
  PVEDatastoreUser: ["Datastore.AllocateSpace", "Datastore.Audit"],
  PVEVMAdmin: [...VM_PRIVS],
  PVEVMUser: [
    "VM.Audit",
    "VM.Backup",
    "VM.Config.CDROM",
    "VM.Config.Cloudinit",
    "VM.Console",
    "VM.PowerMgmt",
    "VM.GuestAgent.Audit",
  ],
};

export type PveUser = {
  userid: string;
  enable: boolean;
  expire: number;
  firstname: string;
  lastname: string;
  email: string;
  comment: string;
};

export type PveToken = { id: string; expire: number; privsep: boolean; comment: string };
export type PveAcl = { propagate: boolean; path: string; ugids: string[]; roles: string[] };

export type UserCfg = {
  users: PveUser[];
  tokens: PveToken[];
  roles: Map<string, string[]>;
  acls: PveAcl[];
  /** Lines the lab does not model (`group:`, `pool:`, `domain:`), kept verbatim. */
  other: string[];
};

export function parseUserCfg(text: string): UserCfg {
  const cfg: UserCfg = { users: [], tokens: [], roles: new Map(), acls: [], other: [] };
  for (const line of text.split("\n")) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const f = line.split(":");
    switch (f[0]) {
      case "user":
        cfg.users.push({
          userid: f[1] ?? "",
          enable: f[2] !== "0",
          expire: Number(f[3] || 0),
          firstname: f[4] ?? "",
          lastname: f[5] ?? "",
          email: f[6] ?? "",
          comment: f[7] ?? "",
        });
        break;
      case "token":
        cfg.tokens.push({
          id: f[1] ?? "",
          expire: Number(f[2] || 0),
          privsep: f[3] !== "0",
          comment: f[4] ?? "",
        });
        break;
      case "role":
        cfg.roles.set(f[1] ?? "", (f[2] ?? "").split(",").filter(Boolean));
        break;
      case "acl":
        cfg.acls.push({
          propagate: f[1] !== "0",
          path: f[2] ?? "/",
          ugids: (f[3] ?? "").split(",").filter(Boolean),
          roles: (f[4] ?? "").split(",").filter(Boolean),
        });
        break;
      default:
        cfg.other.push(line);
    }
  }
  return cfg;
}

export function formatUserCfg(cfg: UserCfg): string {
  let out = "";
  for (const u of cfg.users) {
    out += `user:${u.userid}:${u.enable ? 1 : 0}:${u.expire}:${u.firstname}:${u.lastname}:${u.email}:${u.comment}::\n`;
  }
  for (const t of cfg.tokens) {
    out += `token:${t.id}:${t.expire}:${t.privsep ? 1 : 0}:${t.comment}:\n`;
  }
  for (const line of cfg.other) out += `${line}\n`;
  out += "\n";
  for (const [role, privs] of cfg.roles) out += `role:${role}:${privs.join(",")}:\n`;
  out += "\n";
  for (const a of cfg.acls) {
    out += `acl:${a.propagate ? 1 : 0}:${a.path}:${a.ugids.join(",")}:${a.roles.join(",")}:\n`;
  }
  return out;
}

const DEFAULT_USER_CFG = "user:root@pam:1:0:::root@pve.lab.internal:::\n";

export function readUserCfg(root: string): UserCfg {
  let text = DEFAULT_USER_CFG;
  try {
    text = fs.readFileSync(userCfgPath(root), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return parseUserCfg(text);
}

export function writeUserCfg(root: string, cfg: UserCfg): void {
  writeAtomic(userCfgPath(root), formatUserCfg(cfg));
}

export function readTokenSecrets(root: string): Map<string, string> {
  const secrets = new Map<string, string>();
  let text = "";
  try {
    text = fs.readFileSync(tokenCfgPath(root), "utf8");
  } catch {
    return secrets;
  }
  for (const line of text.split("\n")) {
    const [id, secret] = line.trim().split(/\s+/);
    if (id && secret) secrets.set(id, secret);
  }
  return secrets;
}

export function writeTokenSecrets(root: string, secrets: Map<string, string>): void {
  writeAtomic(
    tokenCfgPath(root),
    [...secrets].map(([id, secret]) => `${id} ${secret}\n`).join(""),
    0o600,
  );
}

// ---------------------------------------------------------------------------------------------
// Validation (texts as pve-access-control / PVE::JSONSchema print them)

export const USERID_RE = /^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$/;
export const TOKENID_RE = /^[A-Za-z][A-Za-z0-9.\-_]+$/;
export const ROLEID_RE = /^[A-Za-z0-9.\-_]+$/;

/** Splits `-privs "A B,C;D"` like pve-access-control (`PVE::Tools::split_list`). */
export function splitPrivList(text: string): string[] {
  return text
    .split(/[\s,;\0]+/)
    .map((p) => p.trim())
    .filter(Boolean);
}

/** Throws `invalid privilege '<p>'` for a privilege PVE 9 does not know (e.g. `VM.Monitor`). */
export function verifyPrivs(privs: string[]): void {
  for (const p of privs) {
    if (!VALID.has(p)) throw new Error(`invalid privilege '${p}'`);
  }
}

export function rolePrivs(cfg: UserCfg, role: string): string[] | undefined {
  return BUILTIN_ROLES[role] ?? cfg.roles.get(role);
}

// ---------------------------------------------------------------------------------------------
// Effective privileges

/** Privilege → propagate flag (1/0), as `GET /access/permissions` reports them. */
export type PrivSet = Map<string, 0 | 1>;

function pathAncestors(p: string): string[] {
  const parts = p.split("/").filter(Boolean);
  const out = ["/"];
  for (let i = 1; i <= parts.length; i++) out.push(`/${parts.slice(0, i).join("/")}`);
  return out;
}

function normalizePath(p: string): string {
  const parts = p.split("/").filter(Boolean);
  return `/${parts.join("/")}`;
}

/** The privileges one subject (a user or a token id) holds through its own ACLs at `path`. */
function aclPrivs(cfg: UserCfg, subject: string, target: string): PrivSet {
  const full = normalizePath(target);
  let result: PrivSet = new Map();
  for (const level of pathAncestors(full)) {
    const entries = cfg.acls.filter(
      (a) =>
        normalizePath(a.path) === level &&
        a.ugids.includes(subject) &&
        (a.propagate || level === full),
    );
    if (entries.length === 0) continue;
    const next: PrivSet = new Map();
    for (const acl of entries) {
      for (const role of acl.roles) {
        for (const priv of rolePrivs(cfg, role) ?? []) {
          const flag = acl.propagate ? 1 : 0;
          next.set(priv, Math.max(next.get(priv) ?? 0, flag) as 0 | 1);
        }
      }
    }
    result = next;
  }
  return result;
}

function userPrivs(cfg: UserCfg, userid: string, target: string): PrivSet {
  const user = cfg.users.find((u) => u.userid === userid);
  if (userid === "root@pam") {
    return new Map(PVE9_PRIVILEGES.map((p) => [p, 1 as const]));
  }
  if (!user || !user.enable) return new Map();
  return aclPrivs(cfg, userid, target);
}

/** Effective privileges of a user id or a token id (`user@realm!name`) at `path`. */
export function effectivePrivs(cfg: UserCfg, authid: string, target: string): PrivSet {
  const bang = authid.indexOf("!");
  if (bang < 0) return userPrivs(cfg, authid, target);
  const userid = authid.slice(0, bang);
  const token = cfg.tokens.find((t) => t.id === authid);
  const user = userPrivs(cfg, userid, target);
  if (!token) return new Map();
  if (!token.privsep) return user;
  const own = aclPrivs(cfg, authid, target);
  const both: PrivSet = new Map();
  for (const [priv, flag] of own) {
    const userFlag = user.get(priv);
    if (userFlag !== undefined) both.set(priv, Math.min(flag, userFlag) as 0 | 1);
  }
  return both;
}

export function hasPriv(cfg: UserCfg, authid: string, target: string, priv: string): boolean {
  return effectivePrivs(cfg, authid, target).has(priv);
}

/** Paths `GET /access/permissions` reports without `path`: the base tree plus every ACL path. */
export function permissionPaths(cfg: UserCfg): string[] {
  const paths = new Set([
    "/",
    "/access",
    "/access/groups",
    "/nodes",
    "/pool",
    "/sdn",
    "/storage",
    "/vms",
  ]);
  for (const acl of cfg.acls) paths.add(normalizePath(acl.path));
  return [...paths].sort();
}

export function newTokenSecret(): string {
  return randomUUID();
}
