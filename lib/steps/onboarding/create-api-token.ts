import { z } from "zod";
import { advance, fail, type Outcome, type Step } from "@/lib/pipeline/step";
import { ProxmoxAuthError, ProxmoxCertificateMismatchError } from "@/lib/proxmox/errors";
import {
  CONSOLE_PRIVILEGE_NAMES,
  CONSOLE_ROLE,
  CONSOLE_TOKEN_ID,
  CONSOLE_TOKEN_NAME,
  CONSOLE_USER,
} from "@/lib/proxmox/console-identity";
import { sh } from "@/lib/ssh";
import { asRoot } from "../remote-job/remote-host";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";
import { alreadyInPlace } from "../../pipeline/already-in-place";

const MARK = "--clupilot--";
const HOST_FILE = (file: string) => `"/etc/pve/local/${file}"`;

/**
 * One round trip for every fact the decision needs: users, roles, ACLs, the console user's
 * tokens (as JSON, each section with its own exit code so "could not ask" is never "absent"),
 * the API certificate's fingerprint and the node name.
 *
 * The certificate is read from the host's files over the pinned SSH connection, so the API's
 * trust derives from the SSH pin instead of a second, unauthenticated first contact. pveproxy
 * serves `pveproxy-ssl.pem` when an operator installed one (custom or ACME certificate), else
 * the node certificate `pve-ssl.pem`; the probe reads the one pveproxy serves.
 */
export const ACCESS_PROBE = [
  `pveum user list --output-format json; printf '\\n${MARK} users %s\\n' "$?"`,
  `pveum role list --output-format json; printf '\\n${MARK} roles %s\\n' "$?"`,
  `pveum acl list --output-format json; printf '\\n${MARK} acls %s\\n' "$?"`,
  sh`pveum user token list ${CONSOLE_USER} --output-format json` +
    `; printf '\\n${MARK} tokens %s\\n' "$?"`,
  `f=${HOST_FILE("pveproxy-ssl.pem")}; [ -e "$f" ] || f=${HOST_FILE("pve-ssl.pem")}; ` +
    `printf '%s\\n' "$f"; openssl x509 -noout -fingerprint -sha256 -in "$f"; ` +
    `printf '\\n${MARK} cert %s\\n' "$?"`,
  `uname -n; printf '\\n${MARK} nodename %s\\n' "$?"`,
  // pmxcfs holds corosync.conf only on a cluster's members (every member sees the same file).
  `if [ -e /etc/pve/corosync.conf ]; then echo member; else echo standalone; fi; ` +
    `printf '\\n${MARK} cluster %s\\n' "$?"`,
].join("\n");

const ZUserList = z.array(z.object({ userid: z.string() }).loose());
const ZRoleList = z.array(
  z.object({ roleid: z.string(), privs: z.union([z.string(), z.array(z.string())]) }).loose(),
);
const ZAclList = z.array(
  z
    .object({
      path: z.string(),
      type: z.string(),
      ugid: z.string(),
      roleid: z.string(),
      propagate: z.coerce.number(),
    })
    .loose(),
);
const ZTokenList = z.array(
  z.object({ tokenid: z.string(), privsep: z.coerce.number().optional() }).loose(),
);
const ZTokenAdd = z.object({ "full-tokenid": z.string(), value: z.string().min(1) }).loose();

export type AccessFacts = {
  userExists: boolean;
  /** The console role's privileges; null when the role does not exist. */
  rolePrivs: string[] | null;
  userAclOnRoot: boolean;
  tokenAclOnRoot: boolean;
  /** The console token as Proxmox lists it; null when it does not exist. */
  token: { privsep: boolean } | null;
  certPath: string;
  /** `AB:CD:…` (upper case), as openssl and Proxmox print it. */
  certSha256: string;
  nodeName: string;
  /**
   * The node is a member of a Proxmox cluster: user.cfg and the token secrets (priv/token.cfg)
   * are the whole cluster's, shared with every member the console may already hold the token for.
   */
  clusterMember: boolean;
};

/** Node names Proxmox accepts in `/nodes/{node}` (an FQDN is rejected with 400). */
export const NODE_NAME_RE = /^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$/;

function sections(stdout: string): Map<string, { body: string; code: number }> {
  const out = new Map<string, { body: string; code: number }>();
  const re = new RegExp(`\\n${MARK} (\\w+) (\\d+)\\n`, "g");
  let start = 0;
  for (const match of stdout.matchAll(re)) {
    out.set(match[1]!, { body: stdout.slice(start, match.index).trim(), code: Number(match[2]) });
    start = match.index + match[0].length;
  }
  return out;
}

function parseJson<S extends z.ZodType>(what: string, body: string, schema: S): z.infer<S> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new Error(`${what} printed something that is not JSON: ${body.slice(0, 200)}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`${what} answered in an unexpected shape`);
  return parsed.data;
}

/**
 * Reads the probe's output. Any section that did not answer throws (retried): a failed
 * `pveum user list` says nothing about whether the user exists. The token list only counts
 * when the user exists (for a missing user it fails by design).
 */
export function parseAccessProbe(stdout: string): AccessFacts {
  const parts = sections(stdout);
  const section = (name: string, what: string) => {
    const part = parts.get(name);
    if (!part) throw new Error(`the access probe's output lacks its ${name} section`);
    if (part.code !== 0) throw new Error(`${what} failed (exit ${part.code}): ${part.body}`);
    return part.body;
  };
  const users = parseJson("pveum user list", section("users", "pveum user list"), ZUserList);
  const roles = parseJson("pveum role list", section("roles", "pveum role list"), ZRoleList);
  const acls = parseJson("pveum acl list", section("acls", "pveum acl list"), ZAclList);
  const userExists = users.some((u) => u.userid === CONSOLE_USER);
  const tokens = userExists
    ? parseJson("pveum user token list", section("tokens", "pveum user token list"), ZTokenList)
    : [];
  const role = roles.find((r) => r.roleid === CONSOLE_ROLE);
  const token = tokens.find((t) => t.tokenid === CONSOLE_TOKEN_NAME);
  const aclOnRoot = (type: string, ugid: string) =>
    acls.some(
      (a) =>
        a.path === "/" &&
        a.type === type &&
        a.ugid === ugid &&
        a.roleid === CONSOLE_ROLE &&
        a.propagate === 1,
    );

  const cert = section("cert", "reading the API certificate with openssl");
  const [certPath = "", ...certLines] = cert.split("\n");
  const fingerprint = /sha256 Fingerprint=([0-9A-Fa-f:]+)/i.exec(certLines.join("\n"))?.[1];
  if (!fingerprint || fingerprint.replace(/:/g, "").length !== 64) {
    throw new Error(`openssl printed no SHA-256 fingerprint for ${certPath}: ${cert}`);
  }
  // PVE::INotify::nodename(): the kernel's node name up to the first dot.
  const nodeName = section("nodename", "uname -n").split("\n")[0]!.trim().split(".")[0]!;
  const membership = section("cluster", "looking for /etc/pve/corosync.conf");
  if (membership !== "member" && membership !== "standalone") {
    throw new Error(`the cluster check printed neither member nor standalone: ${membership}`);
  }

  return {
    userExists,
    rolePrivs: role
      ? (Array.isArray(role.privs) ? role.privs : role.privs.split(/[\s,;]+/)).filter(Boolean)
      : null,
    userAclOnRoot: aclOnRoot("user", CONSOLE_USER),
    tokenAclOnRoot: aclOnRoot("token", CONSOLE_TOKEN_ID),
    token: token ? { privsep: token.privsep !== 0 } : null,
    certPath,
    certSha256: fingerprint.toUpperCase(),
    nodeName,
    clusterMember: membership === "member",
  };
}

export type AccessAction =
  | { kind: "createUser" }
  | { kind: "createRole" }
  | { kind: "fixRole"; had: string[] }
  | { kind: "grantUser" }
  | { kind: "createToken" }
  | { kind: "rotateToken"; why: string }
  | { kind: "adoptToken"; why: string }
  | { kind: "grantToken" };

/** What the console knows about its secret for the token on this host. */
export type SecretState =
  /** No secret stored for `clupilot@pve!console`. */
  | "none"
  /** Stored, and the API accepted it (or it was not asked because the token is being replaced). */
  | "held"
  /** Stored, but the API answered 401: the token was recreated behind the console's back. */
  | "refused";

function samePrivs(a: readonly string[], b: readonly string[]): boolean {
  const set = new Set(a);
  return set.size === new Set(b).size && b.every((p) => set.has(p));
}

/**
 * The decision: what must change so that user, role, ACLs and token are exactly right. Nothing
 * when everything holds (the second visit touches nothing). A token whose secret the console
 * does not hold is rotated (remove + add), never guessed; Proxmox shows a secret only once.
 * Except on a cluster's member: the token is the whole cluster's, and rotating it would lock the
 * console out of every member onboarded before — the secret is adopted from the node's
 * `priv/token.cfg` (root only, read over the pinned SSH connection) instead.
 */
export function planAccess(facts: AccessFacts, secret: SecretState): AccessAction[] {
  const actions: AccessAction[] = [];
  if (!facts.userExists) actions.push({ kind: "createUser" });
  if (facts.rolePrivs === null) actions.push({ kind: "createRole" });
  else if (!samePrivs(facts.rolePrivs, CONSOLE_PRIVILEGE_NAMES))
    actions.push({ kind: "fixRole", had: facts.rolePrivs });
  // A separated token holds the intersection of its own and its user's ACLs: both are needed.
  if (!facts.userAclOnRoot) actions.push({ kind: "grantUser" });
  let newToken = false;
  if (facts.token === null) {
    actions.push({ kind: "createToken" });
    newToken = true;
  } else if (!facts.token.privsep) {
    actions.push({
      kind: "rotateToken",
      why: "it has no privilege separation (it would hold every privilege of its user)",
    });
    newToken = true;
  } else if (secret === "none" || secret === "refused") {
    const why =
      secret === "none"
        ? "the console does not hold its secret"
        : "the API refused the secret the console holds";
    if (facts.clusterMember)
      actions.push({ kind: "adoptToken", why: `${why}; shared by the cluster` });
    else {
      actions.push({ kind: "rotateToken", why });
      newToken = true;
    }
  }
  // Removing a token removes its ACLs; a new token has none yet.
  if (newToken || !facts.tokenAclOnRoot) actions.push({ kind: "grantToken" });
  return actions;
}

const TOKEN_CFG = "/etc/pve/priv/token.cfg";

const TOKEN_ADD = sh`pveum user token add ${CONSOLE_USER} ${CONSOLE_TOKEN_NAME} --privsep 1 --comment ${"CluPilot console"} --output-format json`;

/** The command for one action; every one is in test/command-catalog.ts. */
export function accessCommand(action: AccessAction): string {
  const privs = CONSOLE_PRIVILEGE_NAMES.join(",");
  switch (action.kind) {
    case "createUser":
      return sh`pveum user add ${CONSOLE_USER} --comment ${"CluPilot console (API token only)"}`;
    case "createRole":
      return sh`pveum role add ${CONSOLE_ROLE} --privs ${privs}`;
    case "fixRole":
      // Without --append, modify replaces the list: privileges someone added are removed too.
      return sh`pveum role modify ${CONSOLE_ROLE} --privs ${privs}`;
    case "grantUser":
      return sh`pveum acl modify / --users ${CONSOLE_USER} --roles ${CONSOLE_ROLE} --propagate 1`;
    case "createToken":
      return TOKEN_ADD;
    case "rotateToken":
      return sh`pveum user token remove ${CONSOLE_USER} ${CONSOLE_TOKEN_NAME}` + ` && ${TOKEN_ADD}`;
    case "adoptToken":
      // `<userid>!<tokenid> <secret>` per line; exit 1 when the token has no line.
      return (
        sh`awk -v id=${CONSOLE_TOKEN_ID} '$1 == id { print $2; found = 1 } END { exit !found }'` +
        ` ${TOKEN_CFG}`
      );
    case "grantToken":
      return sh`pveum acl modify / --tokens ${CONSOLE_TOKEN_ID} --roles ${CONSOLE_ROLE} --propagate 1`;
  }
}

function describeAction(action: AccessAction): string {
  switch (action.kind) {
    case "createUser":
      return `created user ${CONSOLE_USER}`;
    case "createRole":
      return `created role ${CONSOLE_ROLE}`;
    case "fixRole":
      return `reset role ${CONSOLE_ROLE} to its privileges (had ${action.had.join(",") || "none"})`;
    case "grantUser":
      return `granted ${CONSOLE_ROLE} to ${CONSOLE_USER} on /`;
    case "createToken":
      return `created token ${CONSOLE_TOKEN_ID}`;
    case "rotateToken":
      return `rotated token ${CONSOLE_TOKEN_ID} (${action.why})`;
    case "adoptToken":
      return `adopted the secret of token ${CONSOLE_TOKEN_ID} from the cluster's token.cfg (${action.why})`;
    case "grantToken":
      return `granted ${CONSOLE_ROLE} to token ${CONSOLE_TOKEN_ID} on /`;
  }
}

/** The secret from `pveum user token add --output-format json`. */
export function parseTokenAdd(stdout: string): string {
  const data = parseJson("pveum user token add", stdout.trim(), ZTokenAdd);
  if (data["full-tokenid"] !== CONSOLE_TOKEN_ID) {
    throw new Error(`pveum created token ${data["full-tokenid"]}, expected ${CONSOLE_TOKEN_ID}`);
  }
  return data.value;
}

/**
 * Whether the secret the console holds still opens the API. Asked only when one is held; a
 * 401 is an answer (rotate), anything else but success is "could not ask" and thrown.
 */
async function secretState(
  services: HostServices,
  facts: AccessFacts,
): Promise<SecretState | Outcome> {
  const host = await services.host();
  if (host.apiTokenId !== CONSOLE_TOKEN_ID || !host.apiTokenCredentialId) return "none";
  // A token that is missing or about to be replaced needs no question (a 401 costs ~3 s).
  if (!facts.token?.privsep) return "held";
  try {
    await (await services.proxmox()).version();
    return "held";
  } catch (error) {
    if (error instanceof ProxmoxAuthError) return "refused";
    if (error instanceof ProxmoxCertificateMismatchError) {
      return fail(
        `${error.message} The certificate read from the host over SSH is not the one the API ` +
          "serves: check pveproxy's certificate (/etc/pve/local/pveproxy-ssl.pem) and restart pveproxy",
      );
    }
    throw error;
  }
}

/**
 * Goal: user `clupilot@pve`, role `CluPilot` with exactly CONSOLE_PRIVILEGES, token `console`
 * with privilege separation and its own ACL on `/` (and the user's, which it is intersected
 * with); the console holds the token's secret (sealed); the API certificate's fingerprint and
 * the node name are recorded, read over the pinned SSH connection.
 */
export const createApiToken: Step<HostServices> = {
  name: "CreateApiToken",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentSshFailures(async () => {
      const { services } = ctx;
      const probe = await services.exec(ACCESS_PROBE, { timeoutMs: 60_000 });
      const facts = parseAccessProbe(probe.stdout);
      if (!NODE_NAME_RE.test(facts.nodeName)) {
        return fail(
          `the host's name "${facts.nodeName}" is not a valid Proxmox node name ` +
            "(letters, digits and inner dashes only); fix the hostname and retry",
        );
      }

      // Pins first: checking a held secret goes through the API, which needs them.
      const host = await services.host();
      if (host.nodeName !== facts.nodeName || host.apiCertSha256 !== facts.certSha256) {
        await services.updateHost({ nodeName: facts.nodeName, apiCertSha256: facts.certSha256 });
        ctx.log(`pinned API certificate ${facts.certSha256} (${facts.certPath})`);
        ctx.log(`node name ${facts.nodeName}`);
      }

      const secret = await secretState(services, facts);
      if (typeof secret !== "string") return secret;
      const actions = planAccess(facts, secret);
      if (actions.length === 0) {
        return alreadyInPlace(
          ctx,
          `user ${CONSOLE_USER}, role ${CONSOLE_ROLE}, token ${CONSOLE_TOKEN_ID} and their ACLs as required; the console holds the token's secret`,
        );
      }

      for (const action of actions) {
        const command = accessCommand(action);
        if (action.kind === "adoptToken") {
          // The file's line is the secret: read outside the logged exec, stored sealed.
          ctx.log(
            `reading token ${CONSOLE_TOKEN_ID}'s secret from the cluster's token.cfg (never logged)`,
          );
          const session = await services.ssh();
          const result = await session.exec(asRoot(host.sshUser, command), { timeoutMs: 60_000 });
          const secret = result.stdout.trim();
          if (result.code !== 0 || !/^[0-9a-f-]{36}$/i.test(secret)) {
            throw new Error(
              `reading token ${CONSOLE_TOKEN_ID}'s secret from /etc/pve/priv/token.cfg failed ` +
                `(exit ${result.code}${result.code === 0 ? ", no secret on its line" : ""}): ${result.stderr.trim()}`,
            );
          }
          await services.storeApiToken(CONSOLE_TOKEN_ID, secret);
        } else if (action.kind === "createToken" || action.kind === "rotateToken") {
          // The answer carries the secret: run it outside the logged exec, so it never
          // reaches the run log, and hand it straight to the sealed store.
          ctx.log(
            `${action.kind === "createToken" ? "creating" : "rotating"} token ${CONSOLE_TOKEN_ID}` +
              " (its secret is stored sealed and never logged)",
          );
          const session = await services.ssh();
          const result = await session.exec(asRoot(host.sshUser, command), { timeoutMs: 60_000 });
          if (result.code !== 0) {
            throw new Error(
              `creating token ${CONSOLE_TOKEN_ID} failed (exit ${result.code}): ${result.stderr.trim()}`,
            );
          }
          await services.storeApiToken(CONSOLE_TOKEN_ID, parseTokenAdd(result.stdout));
        } else {
          const result = await services.exec(command, { timeoutMs: 60_000 });
          if (result.code !== 0) {
            throw new Error(
              `${describeAction(action)} failed (exit ${result.code}): ${result.stderr.trim()}`,
            );
          }
        }
        ctx.log(describeAction(action));
      }
      return advance(actions.map(describeAction).join("; "));
    }),
};
