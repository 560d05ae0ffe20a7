import { z } from "zod";

/**
 * What an admin enters for a host's out-of-band power controller, as the API and the host
 * page's form send it. Every value ends up in a request to a BMC, an `ipmitool` argument (an
 * array passed to execFile, never a shell) or a UDP packet, and is still held to what it can
 * be: no value can start with `-` and pass for an ipmitool option.
 */

export const POWER_CONTROLLER_KINDS = ["redfish", "ipmi", "wol", "pve-wol"] as const;
export type PowerControllerKind = (typeof POWER_CONTROLLER_KINDS)[number];

const ADDRESS =
  /^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$|^[0-9a-fA-F]*:[0-9a-fA-F:.]+$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const MAC = /^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$/;
const USER = /^[A-Za-z0-9_.@][A-Za-z0-9_.@-]*$/;
const SYSTEM_ID = /^[A-Za-z0-9_.-]{1,64}$/;
const CONTROL = /[\u0000-\u001f\u007f]/;

export const REDFISH_AUTH = ["basic", "session"] as const;
export type RedfishAuth = (typeof REDFISH_AUTH)[number];

const port = (fallback: number) =>
  z.preprocess(
    (value) => (value === "" || value === null || value === undefined ? fallback : value),
    z.coerce
      .number({ error: "Enter a port number." })
      .int("Enter a whole number.")
      .min(1, "Ports run from 1 to 65535.")
      .max(65535, "Ports run from 1 to 65535."),
  );

const address = z
  .string({ error: "Enter the BMC's IP address or DNS name." })
  .trim()
  .min(1, "Enter the BMC's IP address or DNS name.")
  .max(253, "At most 253 characters.")
  .regex(ADDRESS, "Enter an IPv4/IPv6 address or a DNS name.");

const username = (max: number) =>
  z
    .string({ error: "Enter the BMC user." })
    .trim()
    .min(1, "Enter the BMC user.")
    .max(max, `At most ${max} characters.`)
    .regex(USER, "Letters, digits, _ . @ and - (not first) only.");

/** Left out (or empty): keep the stored password, if the controller already has one. */
const password = (max: number) =>
  z.preprocess(
    (value) => (value === "" || value === null ? undefined : value),
    z
      .string({ error: "Enter the BMC password." })
      .max(max, `At most ${max} characters.`)
      .refine((value) => !CONTROL.test(value), "No control characters (line breaks, tabs).")
      .optional(),
  );

export const ZRedfishControllerInput = z.object({
  kind: z.literal("redfish"),
  address,
  port: port(443),
  username: username(64),
  password: password(128),
  systemId: z.preprocess(
    (value) => (value === "" || value === null || value === undefined ? "1" : value),
    z
      .string({ error: "Enter the system's id below /redfish/v1/Systems." })
      .trim()
      .regex(SYSTEM_ID, "The id as in /redfish/v1/Systems/<id>: letters, digits, _ . and -."),
  ),
  /**
   * `basic`: the user and password on every request. `session`: one SessionService session per
   * use (`POST /redfish/v1/SessionService/Sessions`, its `X-Auth-Token`, deleted when done) — for
   * BMCs that limit or log basic auth.
   */
  auth: z.preprocess(
    (value) => (value === "" || value === null || value === undefined ? "basic" : value),
    z.enum(REDFISH_AUTH, { error: "Choose basic auth or a Redfish session." }),
  ),
});

export const ZIpmiControllerInput = z.object({
  kind: z.literal("ipmi"),
  address,
  port: port(623),
  // IPMI 2.0: user names of at most 16 bytes, passwords of at most 20.
  username: username(16),
  password: password(20),
});

export const ZWolControllerInput = z.object({
  kind: z.literal("wol"),
  mac: z
    .string({ error: "Enter the host's MAC address." })
    .trim()
    .regex(MAC, "A MAC address looks like aa:bb:cc:dd:ee:ff.")
    .transform((value) => value.toLowerCase().replace(/-/g, ":")),
  broadcastAddress: z
    .string({ error: "Enter the broadcast address of the host's network." })
    .trim()
    .regex(IPV4, "An IPv4 broadcast address, e.g. 192.168.1.255."),
  port: port(9),
});

/**
 * Wake-on-LAN through the host's cluster: Proxmox's `POST /nodes/{node}/wakeonlan`, asked of a
 * member that is up, which sends the packet for the MAC in the node's own config (`wakeonlan:`
 * in /etc/pve/nodes/<node>/config). Nothing to enter: the node and its cluster are the host's.
 */
export const ZPveWolControllerInput = z.object({ kind: z.literal("pve-wol") });

export const ZPowerControllerInput = z.discriminatedUnion(
  "kind",
  [ZRedfishControllerInput, ZIpmiControllerInput, ZWolControllerInput, ZPveWolControllerInput],
  { error: "Choose Redfish, IPMI, Wake-on-LAN or Wake-on-LAN via a cluster member." },
);
export type TPowerControllerInput = z.infer<typeof ZPowerControllerInput>;

/** A controller as the browser and the API see it: never its password. */
export type PowerControllerView = {
  /** Exactly one of the two: an onboarded host's controller, or a backup server's (its target). */
  hostId: string | null;
  targetId: string | null;
  kind: PowerControllerKind;
  address: string | null;
  port: number;
  username: string | null;
  systemId: string | null;
  /** redfish: basic auth or a session per use; null for the other kinds. */
  redfishAuth: RedfishAuth | null;
  mac: string | null;
  broadcastAddress: string | null;
  /** redfish: the pinned certificate, null until the first contact. */
  certSha256: string | null;
  hasPassword: boolean;
  updatedAt: string;
};
