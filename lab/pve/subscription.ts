import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { readDebianFaults } from "../debian/lab-state";
import { nodeName } from "./state";

/**
 * A node's Proxmox VE subscription, after pve-manager's PVE::API2::Subscription (9.x) and
 * proxmox-perl-rs's Proxmox::RS::Subscription:
 *
 * - `PUT /nodes/{node}/subscription key=…` (Sys.Modify on `/nodes/{node}`; the console's token
 *   lacks it, `pvesh set` as root has it): the key trimmed and held to the key pattern, written
 *   as status `new`, then checked against the shop and written again with the shop's answer —
 *   also when that answer is not `active` (PUT itself succeeds; the status says why). Each write
 *   also writes apt's credentials for the enterprise repository
 *   (`/etc/apt/auth.conf.d/pve.conf`: `machine enterprise.proxmox.com/debian/pve login <key>
 *   password <server id>`), as `write_etc_subscription` does.
 * - `GET /nodes/{node}/subscription`: `notfound` with "There is no subscription key" when none is
 *   set, else what was stored, with `sockets`, `url` and (for Sys.Audit) `key` and `serverid`.
 *
 * The lab's shop (shop.proxmox.com's stand-in) knows exactly the keys of
 * {@link LAB_SUBSCRIPTIONS}: each is active; any other well-formed key is `invalid` with the
 * shop's message. The lab's enterprise repository (lab/debian/tools/apt-get.ts) answers a host
 * whose apt credentials name an active key of the shop bound to that host's server ID, and 401
 * to anyone else, as enterprise.proxmox.com does.
 */

/** The key pattern of pve-manager 9.1's schema (`\s*pve([1248])([cbsp])-[0-9a-f]{10}\s*`). */
export const LAB_KEY_PATTERN = /^\s*pve([1248])([cbsp])-[0-9a-f]{10}\s*$/;

export type LabSubscription = { productname: string; nextduedate: string; regdate: string };

/** Keys the lab's shop sells; every one active. */
export const LAB_SUBSCRIPTIONS: Readonly<Record<string, LabSubscription>> = {
  "pve1c-0a1b2c3d4e": {
    productname: "Proxmox VE Community Subscription 1 CPU/year",
    nextduedate: "2027-11-30",
    regdate: "2026-11-30 00:00:00",
  },
  "pve2s-5f6a7b8c9d": {
    productname: "Proxmox VE Standard Subscription 2 CPUs/year",
    nextduedate: "2027-06-15",
    regdate: "2026-06-15 00:00:00",
  },
};

/** The lab's error when the node cannot reach the shop (`debian.aptNetworkDown`). */
export const LAB_SHOP_UNREACHABLE =
  "error sending request for url (https://shop.proxmox.com/modules/servers/licensing/verify.php): error trying to connect: dns error: failed to lookup address information: Temporary failure in name resolution";

/** What the lab's shop says about a key it does not know. */
export const LAB_SHOP_INVALID_MESSAGE = "Invalid license key";

const SUBSCRIPTION_FILE = "etc/subscription";
const APT_AUTH_FILE = "etc/apt/auth.conf.d/pve.conf";
const ENTERPRISE_MACHINE = "enterprise.proxmox.com/debian/pve";
const SHOP_URL = "https://www.proxmox.com/en/proxmox-virtual-environment/pricing";

type Stored = {
  status: string;
  key: string;
  checktime: number;
  serverid?: string;
  level?: string;
  productname?: string;
  nextduedate?: string;
  regdate?: string;
  message?: string;
};

/** The node's server ID: 32 upper-case hex digits, stable per node (Proxmox hashes a MAC). */
export function labServerId(root: string): string {
  return createHash("md5")
    .update(`clupilot-lab-server:${nodeName(root)}`)
    .digest("hex")
    .toUpperCase();
}

function readStored(root: string): Stored | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, SUBSCRIPTION_FILE), "utf8")) as Stored;
  } catch {
    return null;
  }
}

function writeAtomic(file: string, text: string, mode: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp.${process.pid}`;
  fs.writeFileSync(tmp, text, { mode });
  fs.renameSync(tmp, file);
}

function writeStored(root: string, info: Stored): void {
  // The lab keeps JSON (nothing but the lab reads it); Proxmox keeps a signed base64 record.
  writeAtomic(path.join(root, SUBSCRIPTION_FILE), `${JSON.stringify(info)}\n`, 0o640);
  if (info.key && info.serverid) {
    writeAtomic(
      path.join(root, APT_AUTH_FILE),
      `machine ${ENTERPRISE_MACHINE}\n login ${info.key}\n password ${info.serverid}\n`,
      0o600,
    );
  }
}

export function getSubscription(root: string, withSecrets: boolean): Record<string, unknown> {
  const serverid = labServerId(root);
  const stored = readStored(root);
  if (!stored) {
    return {
      status: "notfound",
      message: "There is no subscription key",
      url: SHOP_URL,
      ...(withSecrets ? { serverid } : {}),
    };
  }
  if (!withSecrets) return { status: stored.status, message: stored.message, url: SHOP_URL };
  return { ...stored, serverid: stored.serverid ?? serverid, sockets: 1, url: SHOP_URL };
}

/** The PUT's work once the route checked the key against {@link LAB_KEY_PATTERN}. */
export function setSubscription(root: string, rawKey: string): null {
  const key = rawKey.trim();
  const checktime = Math.floor(Date.now() / 1000);
  writeStored(root, { status: "new", key, checktime });
  // No network: check_subscription dies, the key stays `new` and the PUT fails with the error.
  if (readDebianFaults(root).aptNetworkDown) throw new Error(LAB_SHOP_UNREACHABLE);
  const serverid = labServerId(root);
  const sold = LAB_SUBSCRIPTIONS[key];
  const level = LAB_KEY_PATTERN.exec(key)![2]!;
  writeStored(
    root,
    sold
      ? { status: "active", key, checktime, serverid, level, ...sold }
      : { status: "invalid", key, checktime, serverid, message: LAB_SHOP_INVALID_MESSAGE },
  );
  return null;
}

/**
 * Whether the lab's enterprise repository lets this host in: apt's credentials for it name a
 * key the shop sells, the host's subscription with that key is active, bound to its server ID.
 */
export function enterpriseAccess(root: string): boolean {
  let auth: string;
  try {
    auth = fs.readFileSync(path.join(root, APT_AUTH_FILE), "utf8");
  } catch {
    return false;
  }
  const m = new RegExp(
    `machine\\s+${ENTERPRISE_MACHINE.replace(/\./g, "\\.")}\\s+login\\s+(\\S+)\\s+password\\s+(\\S+)`,
  ).exec(auth);
  if (!m) return false;
  const stored = readStored(root);
  return (
    LAB_SUBSCRIPTIONS[m[1]!] !== undefined &&
    stored?.status === "active" &&
    stored.key === m[1] &&
    m[2] === labServerId(root)
  );
}
