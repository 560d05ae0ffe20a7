import type { TNutSource, UpsReading, UpsSource } from "../reading";
import { NutFailure } from "./connection";
import { sharedNutConnections, type NutConnectionLease, type NutConnectionPool } from "./pool";
import { nutReading } from "./status";

export const DEFAULT_NUT_DEADLINE_MS = 2000;

export type NutUpsSourceOptions = {
  /** Connections shared with other sources; default: the process-wide pool. */
  pool?: NutConnectionPool;
  /** Every read answers within this time, reading or unreliable. Default 2 s. */
  deadlineMs?: number;
};

/** One UPS on a NUT server (upsd): one `LIST VAR <ups>` per read on the server's connection. */
export class NutUpsSource implements UpsSource {
  private lease: NutConnectionLease | null = null;
  /** The console still needs this UPS (setNeeded): logged in while it does. */
  private needed = true;
  private readonly pool: NutConnectionPool;
  private readonly deadlineMs: number;

  constructor(
    private readonly config: TNutSource,
    options: NutUpsSourceOptions = {},
  ) {
    this.pool = options.pool ?? sharedNutConnections;
    this.deadlineMs = options.deadlineMs ?? DEFAULT_NUT_DEADLINE_MS;
  }

  async read(): Promise<UpsReading> {
    const { username, password, upsName } = this.config;
    const hasUser = (username ?? "") !== "";
    if (hasUser !== ((password ?? "") !== "")) {
      return {
        kind: "unreliable",
        at: new Date(),
        reason: `NUT source ${upsName}@${this.config.host}: give both a user name and a password, or neither`,
      };
    }
    if (this.lease === null) {
      this.lease = this.pool.acquire({
        host: this.config.host,
        port: this.config.port,
        ...(hasUser ? { credentials: { username: username!, password: password! } } : {}),
      });
      // A connection opened after the console logged out (a reopened lease) stays logged out.
      if (!this.needed) await this.lease.connection.logout(upsName);
    }
    const connection = this.lease.connection;
    try {
      const vars = await connection.listVar(upsName, this.deadlineMs);
      return nutReading(vars, new Date(), `${connection.where} for UPS ${upsName}`);
    } catch (error) {
      // Anything unexpected is still no reading: the monitor alarms, and decides nothing.
      const reason =
        error instanceof NutFailure
          ? error.message
          : `${connection.where} for UPS ${upsName}: ${error instanceof Error ? error.message : String(error)}`;
      return { kind: "unreliable", at: new Date(), reason };
    }
  }

  async setNeeded(needed: boolean): Promise<void> {
    this.needed = needed;
    const connection = this.lease?.connection;
    if (connection === undefined) return; // not read yet: the first read logs in, or not
    if (needed) connection.loginAgain(this.config.upsName);
    else await connection.logout(this.config.upsName);
  }

  async close(): Promise<void> {
    const lease = this.lease;
    this.lease = null;
    await lease?.release();
  }
}
