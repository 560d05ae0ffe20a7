import crypto from "node:crypto";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";

import { normalizeFingerprint } from "@/lib/proxmox/pinned-https";
import {
  hostPort,
  type PowerController,
  type PowerOnResult,
  type PowerReading,
} from "./controller";

export type RedfishOptions = {
  address: string;
  port: number;
  username: string;
  password: string;
  systemId: string;
  /**
   * `basic`: basic auth on each request. `session`: a SessionService session for each use —
   * `POST /redfish/v1/SessionService/Sessions`, its `X-Auth-Token` on the requests, the session
   * deleted (`DELETE` its `Location`) when done. Default basic.
   */
  auth?: "basic" | "session";
  /** The pinned certificate (`AB:CD:…`); null: pin what the first contact offers. */
  certSha256: string | null;
  /** Called once with the certificate of the first contact, before any credential is sent. */
  onFirstContact?: (certSha256: string) => Promise<void>;
  timeoutMs?: number;
};

type Answer = {
  status: number;
  body: string;
  headers: Record<string, string | string[] | undefined>;
};
type Auth = Record<string, string>;

const SESSIONS_PATH = "/redfish/v1/SessionService/Sessions";

class Unreachable extends Error {}
class CertificateChanged extends Error {}

function fingerprint(der: Buffer): string {
  return crypto
    .createHash("sha256")
    .update(der)
    .digest("hex")
    .toUpperCase()
    .match(/../g)!
    .join(":");
}

/**
 * A Redfish service (DMTF DSP0266) reached over HTTPS with basic auth. Its certificate is
 * pinned like the Proxmox API's (lib/proxmox/pinned-https.ts): the TLS connection is checked
 * against the pin before a byte of the request — and so the password — is written; a BMC's
 * self-signed certificate is trusted at first contact and from then on only that one.
 */
export function redfishController(options: RedfishOptions): PowerController {
  const where = `Redfish at ${hostPort(options.address, options.port)}`;
  const systemPath = `/redfish/v1/Systems/${encodeURIComponent(options.systemId)}`;
  let pinned = options.certSha256;

  const basic: Auth = {
    Authorization: `Basic ${Buffer.from(`${options.username}:${options.password}`).toString("base64")}`,
  };
  const request = (
    method: "GET" | "POST" | "DELETE",
    path: string,
    auth: Auth,
    json?: unknown,
  ): Promise<Answer> => {
    const timeoutMs = options.timeoutMs ?? 10_000;
    const host = options.address;
    const body = json === undefined ? undefined : JSON.stringify(json);
    return new Promise((resolve, reject) => {
      let settled = false;
      const done = (error: Error | null, value?: Answer) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) reject(error);
        else resolve(value!);
      };
      const timer = setTimeout(() => {
        socket.destroy();
        done(new Unreachable(`no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      const socket = tls.connect({
        host,
        port: options.port,
        servername: net.isIP(host) ? undefined : host,
        rejectUnauthorized: false,
      });
      socket.setNoDelay(true);
      socket.once("error", (error) => done(new Unreachable(error.message)));
      socket.once("secureConnect", () => {
        const cert = socket.getPeerCertificate();
        const offered = cert?.raw ? fingerprint(cert.raw) : null;
        if (offered === null) {
          socket.destroy();
          return done(new CertificateChanged("it offered no certificate"));
        }
        const send = () => {
          const req = https.request(
            {
              method,
              host,
              port: options.port,
              path,
              headers: {
                ...auth,
                Accept: "application/json",
                "OData-Version": "4.0",
                ...(body === undefined
                  ? {}
                  : {
                      "Content-Type": "application/json",
                      "Content-Length": Buffer.byteLength(body),
                    }),
              },
              createConnection: () => socket,
              agent: false,
              // Checked against the pin above; a BMC's certificate is self-signed as a rule.
              rejectUnauthorized: false,
            },
            (res) => {
              let text = "";
              res.setEncoding("utf8");
              res.on("data", (chunk: string) => {
                if (text.length < 1_000_000) text += chunk;
              });
              res.on("end", () =>
                done(null, { status: res.statusCode ?? 0, body: text, headers: res.headers }),
              );
              res.on("error", (error) =>
                done(new Unreachable(`the answer broke off: ${error.message}`)),
              );
            },
          );
          req.on("error", (error) => done(new Unreachable(error.message)));
          req.end(body);
        };
        if (pinned === null) {
          pinned = offered;
          const first = options.onFirstContact?.(offered) ?? Promise.resolve();
          first.then(send, (error: unknown) => {
            socket.destroy();
            done(error instanceof Error ? error : new Error(String(error)));
          });
          return;
        }
        if (normalizeFingerprint(offered) !== normalizeFingerprint(pinned)) {
          socket.destroy();
          return done(
            new CertificateChanged(
              `it offers the certificate ${offered}, not the pinned ${pinned}; the console did not send the password`,
            ),
          );
        }
        send();
      });
    });
  };

  const failure = (error: unknown) => {
    if (error instanceof CertificateChanged)
      return { problem: "certificate" as const, reason: `${where}: ${error.message}.` };
    return {
      problem: "unreachable" as const,
      reason: `${where} could not be asked: ${error instanceof Error ? error.message : String(error)}.`,
    };
  };
  const refused = (status: number) =>
    status === 401 || status === 403
      ? {
          problem: "credentials" as const,
          reason: `${where} refused the user ${options.username} (${status}): check the user name and password.`,
        }
      : null;

  type Failed = {
    ok: false;
    problem: "unreachable" | "certificate" | "credentials" | "answer";
    reason: string;
  };

  /**
   * Runs `work` with the credentials of one use: basic auth, or a fresh session deleted after
   * `work`, whatever it returned. The session's token is only ever in a request header: never in
   * a reason, a log line or a return value.
   */
  const withAuth = async <T>(work: (auth: Auth) => Promise<T>): Promise<T | Failed> => {
    if ((options.auth ?? "basic") === "basic") return work(basic);
    let opened: Answer;
    try {
      opened = await request(
        "POST",
        SESSIONS_PATH,
        {},
        {
          UserName: options.username,
          Password: options.password,
        },
      );
    } catch (error) {
      return { ok: false, ...failure(error) };
    }
    const denied = refused(opened.status);
    if (denied) return { ok: false, ...denied };
    const token = opened.headers["x-auth-token"];
    const location = opened.headers.location;
    if (opened.status < 200 || opened.status >= 300 || typeof token !== "string" || !token) {
      return {
        ok: false,
        problem: "answer",
        reason: `${where} did not open a session (POST ${SESSIONS_PATH}: ${opened.status}${typeof token === "string" ? "" : ", no X-Auth-Token"}): choose basic auth, or check that the BMC's SessionService is enabled.`,
      };
    }
    const session: Auth = { "X-Auth-Token": token };
    try {
      return await work(session);
    } finally {
      // The session ends with its use: a BMC holds only a few at a time. Its Location, or the
      // member the body names; a session not deleted expires by the BMC's SessionTimeout.
      const sessionPath = sessionPathOf(location, opened.body);
      if (sessionPath) await request("DELETE", sessionPath, session).catch(() => undefined);
    }
  };

  const readSystem = async (
    auth: Auth,
  ): Promise<
    | { ok: true; system: Record<string, unknown> }
    | {
        ok: false;
        problem: "unreachable" | "certificate" | "credentials" | "answer";
        reason: string;
      }
  > => {
    let answer: Answer;
    try {
      answer = await request("GET", systemPath, auth);
    } catch (error) {
      return { ok: false, ...failure(error) };
    }
    const denied = refused(answer.status);
    if (denied) return { ok: false, ...denied };
    if (answer.status === 404)
      return {
        ok: false,
        problem: "answer",
        reason: `${where} has no system ${systemPath} (404): check the system id (GET /redfish/v1/Systems lists them).`,
      };
    if (answer.status < 200 || answer.status >= 300)
      return {
        ok: false,
        problem: "answer",
        reason: `${where} answered GET ${systemPath} with ${answer.status}.`,
      };
    try {
      const system = JSON.parse(answer.body) as unknown;
      if (system && typeof system === "object" && !Array.isArray(system))
        return { ok: true, system: system as Record<string, unknown> };
    } catch {
      // below
    }
    return {
      ok: false,
      problem: "answer",
      reason: `${where} answered GET ${systemPath} with something that is not a JSON object.`,
    };
  };

  return {
    kind: "redfish",
    where,
    async readPowerState(): Promise<PowerReading> {
      const read = await withAuth(readSystem);
      if (!read.ok) return { state: "unknown", problem: read.problem, reason: read.reason };
      const state = read.system.PowerState;
      // Redfish's PowerState: On, Off, PoweringOn, PoweringOff, Paused.
      if (state === "On" || state === "PoweringOff" || state === "Paused")
        return { state: "on", detail: `${where} reports PowerState ${state}` };
      if (state === "Off" || state === "PoweringOn")
        return { state: "off", detail: `${where} reports PowerState ${state}` };
      return {
        state: "unknown",
        problem: "answer",
        reason: `${where} reports no PowerState we know (${typeof state === "string" ? state : "none"}).`,
      };
    },
    async powerOn(): Promise<PowerOnResult> {
      const result = await withAuth((auth) => powerOnWith(auth));
      return "ok" in result
        ? { sent: false, problem: result.problem, reason: result.reason }
        : result;
    },
  };

  async function powerOnWith(auth: Auth): Promise<PowerOnResult> {
    // The action's target as the system names it; the schema's default path otherwise.
    const read = await readSystem(auth);
    if (!read.ok) return { sent: false, problem: read.problem, reason: read.reason };
    // Some BMCs refuse On for a machine that is on (iDRAC: 409); there is nothing to send.
    if (read.system.PowerState === "On" || read.system.PowerState === "PoweringOn")
      return {
        sent: true,
        detail: `${where} reports PowerState ${read.system.PowerState} already`,
      };
    const actions = read.system.Actions as Record<string, { target?: unknown }> | undefined;
    const named = actions?.["#ComputerSystem.Reset"]?.target;
    const target =
      typeof named === "string" && named.startsWith("/redfish/v1/")
        ? named
        : `${systemPath}/Actions/ComputerSystem.Reset`;
    let answer: Answer;
    try {
      answer = await request("POST", target, auth, { ResetType: "On" });
    } catch (error) {
      return { sent: false, ...failure(error) };
    }
    const denied = refused(answer.status);
    if (denied) return { sent: false, ...denied };
    if (answer.status < 200 || answer.status >= 300)
      return {
        sent: false,
        problem: "answer",
        reason: `${where} refused ResetType On (${answer.status}): ${answer.body.trim().slice(0, 200) || "no message"}.`,
      };
    return { sent: true, detail: `${where} accepted ResetType On (${answer.status})` };
  }
}

/**
 * Where a session is deleted: the `Location` of its creation (a path, or an absolute URL on the
 * BMC), else the `@odata.id` of the session the body returned. Only a path below
 * /redfish/v1/SessionService/Sessions/ is taken: the token is sent nowhere else.
 */
export function sessionPathOf(location: unknown, body: string): string | null {
  const below = (path: string) => (path.startsWith(`${SESSIONS_PATH}/`) ? path : null);
  if (typeof location === "string" && location) {
    try {
      return below(new URL(location, "https://bmc.invalid").pathname);
    } catch {
      return null;
    }
  }
  try {
    const id = (JSON.parse(body) as { "@odata.id"?: unknown })["@odata.id"];
    return typeof id === "string" ? below(id) : null;
  } catch {
    return null;
  }
}
