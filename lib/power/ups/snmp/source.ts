import snmp from "net-snmp";

import type { TSnmpSource, UpsReading, UpsSource } from "../reading";
import {
  POLLED_OBJECTS,
  UPS_MIB,
  upsMibReading,
  type PolledObject,
  type UpsMibValues,
} from "./ups-mib";

export const DEFAULT_SNMP_DEADLINE_MS = 2000;

/** Without these a poll gives no reading; the others may be missing (then null). */
const REQUIRED: ReadonlySet<PolledObject> = new Set(["upsOutputSource", "upsBatteryStatus"]);

export type SnmpUpsSourceOptions = {
  /** Every read answers within this time, reading or unreliable. Default 2 s. */
  deadlineMs?: number;
};

/**
 * One UPS behind an SNMP agent (RFC 1628 UPS-MIB), v1, v2c or v3 (authPriv): one GET of the
 * polled objects per read, on one UDP session kept open until close().
 *
 * SNMPv1 has no per-object "no such object": one missing object fails the whole GET with
 * noSuchName. Then each object is asked alone, and optional objects the agent turned out not
 * to have are left out of later GETs, so a card without upsSecondsOnBattery costs one extra
 * round of requests once, not every second.
 */
export class SnmpUpsSource implements UpsSource {
  private session: snmp.Session | null = null;
  private readonly absent = new Set<PolledObject>();
  private readonly deadlineMs: number;
  private readonly where: string;

  constructor(
    private readonly config: TSnmpSource,
    options: SnmpUpsSourceOptions = {},
  ) {
    this.deadlineMs = options.deadlineMs ?? DEFAULT_SNMP_DEADLINE_MS;
    const host = config.host.includes(":") ? `[${config.host}]` : config.host;
    this.where = `SNMP agent at ${host}:${config.port} (v${config.version})`;
  }

  async read(): Promise<UpsReading> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<UpsReading>((resolve) => {
      timer = setTimeout(() => resolve(this.unreliable(this.timeoutReason())), this.deadlineMs);
    });
    try {
      return await Promise.race([this.poll(), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    this.absent.clear();
    if (session === null) return;
    await new Promise<void>((resolve) => {
      session.on("close", () => resolve());
      try {
        session.close();
      } catch {
        resolve();
      }
    });
  }

  private async poll(): Promise<UpsReading> {
    try {
      const session = this.openSession();
      const asked = POLLED_OBJECTS.filter((name) => !this.absent.has(name));
      let answers: Map<PolledObject, number | null>;
      try {
        answers = await this.get(session, asked);
      } catch (error) {
        if (!isNoSuchName(error)) throw error;
        answers = new Map();
        await Promise.all(
          asked.map(async (name) => {
            try {
              answers.set(name, (await this.get(session, [name])).get(name) ?? null);
            } catch (single) {
              if (!isNoSuchName(single)) throw single;
              answers.set(name, null);
            }
          }),
        );
      }
      for (const [name, value] of answers) {
        if (value === null && !REQUIRED.has(name)) this.absent.add(name);
      }
      const values = Object.fromEntries(
        POLLED_OBJECTS.map((name) => [name, answers.get(name) ?? null]),
      ) as UpsMibValues;
      return upsMibReading(values, new Date(), this.where);
    } catch (error) {
      return this.unreliable(this.describe(error));
    }
  }

  private get(
    session: snmp.Session,
    names: readonly PolledObject[],
  ): Promise<Map<PolledObject, number | null>> {
    return new Promise((resolve, reject) => {
      session.get(
        names.map((name) => UPS_MIB[name]),
        (error, varbinds) => {
          if (error) {
            reject(error);
            return;
          }
          const values = new Map<PolledObject, number | null>();
          names.forEach((name, index) => {
            const varbind = varbinds?.[index];
            const value =
              varbind === undefined || snmp.isVarbindError(varbind) ? null : varbind.value;
            values.set(name, typeof value === "number" && Number.isFinite(value) ? value : null);
          });
          resolve(values);
        },
      );
    });
  }

  private openSession(): snmp.Session {
    if (this.session !== null) return this.session;
    const transport = this.config.host.includes(":") ? "udp6" : "udp4";
    // Two tries within the deadline: a lost UDP datagram should not cost a whole reading.
    const common = { port: this.config.port, transport, timeout: this.deadlineMs / 2, retries: 1 };
    const config = this.config;
    const session =
      config.version === "3"
        ? snmp.createV3Session(
            config.host,
            {
              name: config.user,
              level: snmp.SecurityLevel.authPriv,
              authProtocol: snmp.AuthProtocols[config.authProtocol],
              authKey: config.authKey,
              privProtocol: snmp.PrivProtocols[config.privProtocol],
              privKey: config.privKey,
            },
            { ...common, version: snmp.Version3 } as snmp.SessionOptionsV3,
          )
        : snmp.createSession(config.host, config.community, {
            ...common,
            version: config.version === "1" ? snmp.Version1 : snmp.Version2c,
          } as snmp.SessionOptions);
    session.on("error", () => {
      // A broken socket: drop the session; the next read opens a new one.
      if (this.session === session) this.session = null;
      try {
        session.close();
      } catch {
        // already closed
      }
    });
    this.session = session;
    return session;
  }

  private timeoutReason(): string {
    const secret =
      this.config.version === "3"
        ? "the v3 privacy key (an agent stays silent when it cannot decrypt a request)"
        : "the community (an agent stays silent on a wrong community)";
    return `${this.where} did not answer within ${this.deadlineMs / 1000} s: check the address and port, that the agent runs, and ${secret}`;
  }

  private describe(error: unknown): string {
    if (!(error instanceof Error)) return `${this.where}: ${String(error)}`;
    switch (error.name) {
      case "RequestTimedOutError":
        return this.timeoutReason();
      case "ResponseInvalidError":
        return `${this.where} refused the request: ${error.message}. Check the SNMP user name and keys`;
      case "RequestFailedError":
        return `${this.where} answered ${error.message}`;
      default:
        return `${this.where}: ${error.message}`;
    }
  }

  private unreliable(reason: string): UpsReading {
    return { kind: "unreliable", at: new Date(), reason };
  }
}

function isNoSuchName(error: unknown): boolean {
  return (
    error instanceof Error &&
    error.name === "RequestFailedError" &&
    (error as { status?: unknown }).status === snmp.ErrorStatus.NoSuchName
  );
}
