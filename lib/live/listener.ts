import pg from "pg";
import { z } from "zod";
import { databaseUrl } from "@/lib/db/client";
import { LIVE_CHANNEL, type LiveMessage } from "@/lib/live/notify";

/**
 * Live updates for the browser, from Postgres NOTIFY.
 *
 * Terminology:
 * - **listener**: the one `pg` connection per server process that runs `LISTEN clupilot_live`.
 *   Every open browser stream subscribes to it; a hundred open tabs are one database connection.
 * - **message**: what the worker (and the web server) `pg_notify` on every committed state
 *   change: `{type:"run", runId, hostId, status, step, phase, …}` or `{type:"host", hostId}`.
 *   A run message carries the run's committed facts so the fleet view can patch a row in place;
 *   everything else re-reads the state through the normal API.
 * - **status**: whether the listener is connected. While it is not, messages are lost, so when
 *   it comes back subscribers must re-read everything (the browser does on `connected: true`).
 */

export type LiveEvent =
  { kind: "message"; message: LiveMessage } | { kind: "status"; connected: boolean };

export type LiveSubscriber = (event: LiveEvent) => void;

export type LiveListener = {
  /** Starts the connection on first use; returns the unsubscribe function. */
  subscribe(subscriber: LiveSubscriber): () => void;
  readonly connected: boolean;
  /** Ends the connection for good (tests, shutdown). */
  close(): Promise<void>;
};

export const ZLiveMessage = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("run"),
    runId: z.uuid(),
    hostId: z.uuid().nullable(),
    // The run's committed facts (lib/live/notify.ts notifyLive), relayed for the fleet view.
    status: z.enum(["running", "succeeded", "failed"]).optional(),
    pipeline: z.string().optional(),
    step: z.string().optional(),
    phase: z.string().nullable().optional(),
    stepStartedAt: z.string().optional(),
    failedStep: z.string().nullable().optional(),
    failureReason: z.string().nullable().optional(),
    createdAt: z.string().optional(),
    updatedAt: z.string().optional(),
    finishedAt: z.string().nullable().optional(),
    abortRequested: z.boolean().optional(),
  }),
  z.object({ type: z.literal("host"), hostId: z.uuid() }),
  z.object({ type: z.literal("log"), runId: z.uuid(), seq: z.number().int().positive() }),
  z.object({ type: z.literal("access"), userId: z.uuid() }),
  z.object({ type: z.literal("process-restart"), process: z.string().max(100) }),
  z.object({
    type: z.literal("power"),
    upsId: z.uuid().nullable(),
    eventId: z.number().int().positive().nullable(),
  }),
  z.object({ type: z.literal("list"), list: z.enum(["catalog", "users"]) }),
]);

/** A notification payload is `unknown` until it parses: a malformed one is dropped, not relayed. */
export function parseLiveMessage(payload: string | undefined): LiveMessage | null {
  if (!payload) return null;
  try {
    const result = ZLiveMessage.safeParse(JSON.parse(payload));
    return result.success ? result.data : null;
  } catch {
    return null;
  }
}

/** Delay before reconnect attempt `attempt` (0-based): doubling, capped, with ±20 % jitter. */
export function reconnectDelayMs(attempt: number, initialMs: number, maxMs: number): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 20));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

export function createLiveListener(options: {
  connectionString: string | (() => string);
  channel?: string;
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  /** How often an idle connection proves it is alive (a half-open TCP never errors by itself). */
  healthCheckMs?: number;
  log?: (line: string) => void;
}): LiveListener {
  const channel = options.channel ?? LIVE_CHANNEL;
  const initialBackoffMs = options.initialBackoffMs ?? 500;
  // A refused connection costs nothing: after a database restart the open pages resync within
  // a few seconds of it being back, not half a minute later.
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  const healthCheckMs = options.healthCheckMs ?? 30_000;
  const log = options.log ?? ((line: string) => console.warn(line));

  const subscribers = new Set<LiveSubscriber>();
  const dropped = new WeakSet<pg.Client>();
  let client: pg.Client | null = null;
  let connecting = false;
  let connected = false;
  let started = false;
  let closed = false;
  let attempt = 0;
  let reconnectTimer: NodeJS.Timeout | null = null;
  let healthTimer: NodeJS.Timeout | null = null;
  /** The connection whose health check has not been answered yet. */
  let checking: pg.Client | null = null;

  function emit(event: LiveEvent): void {
    for (const subscriber of subscribers) {
      try {
        subscriber(event);
      } catch (error) {
        log(`live subscriber failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  function setConnected(value: boolean): void {
    if (connected === value) return;
    connected = value;
    emit({ kind: "status", connected: value });
  }

  async function connect(): Promise<void> {
    if (closed || connecting || client) return;
    connecting = true;
    const candidate = new pg.Client({
      connectionString:
        typeof options.connectionString === "function"
          ? options.connectionString()
          : options.connectionString,
      keepAlive: true,
      application_name: "clupilot-live",
    });
    // Registered for the client's whole life: an 'error' without a listener kills the process.
    candidate.on("error", (error) => drop(candidate, error));
    candidate.on("end", () => drop(candidate));
    candidate.on("notification", (notification) => {
      if (notification.channel !== channel) return;
      const message = parseLiveMessage(notification.payload);
      if (message) emit({ kind: "message", message });
    });
    try {
      await candidate.connect();
      await candidate.query(`LISTEN ${candidate.escapeIdentifier(channel)}`);
      if (closed || dropped.has(candidate)) {
        drop(candidate);
        return;
      }
      client = candidate;
      if (attempt > 0) log(`live listener reconnected after ${attempt} attempt(s)`);
      attempt = 0;
      setConnected(true);
    } catch (error) {
      drop(candidate, error);
    } finally {
      connecting = false;
    }
  }

  function drop(candidate: pg.Client, error?: unknown): void {
    if (dropped.has(candidate)) return;
    dropped.add(candidate);
    candidate.end().catch(() => {});
    if (client === candidate) client = null;
    if (checking === candidate) checking = null;
    setConnected(false);
    if (closed) return;
    const delay = reconnectDelayMs(attempt, initialBackoffMs, maxBackoffMs);
    // One line per outage: the attempts while the database is away fail the same way.
    if (attempt === 0) {
      const reason = error instanceof Error ? error.message : "connection ended";
      log(`live listener lost its database connection (${reason}); reconnecting until it is back`);
    }
    attempt += 1;
    if (reconnectTimer) clearTimeout(reconnectTimer);
    reconnectTimer = setTimeout(() => {
      reconnectTimer = null;
      void connect();
    }, delay);
    reconnectTimer.unref?.();
  }

  function start(): void {
    if (started) return;
    started = true;
    void connect();
    healthTimer = setInterval(() => {
      const current = client;
      if (!current) return;
      // Still unanswered a whole interval later: the connection is half-open (the peer went
      // without a FIN or RST), and a second query would only queue behind the first forever.
      if (checking === current) {
        drop(current, new Error(`no answer to its health check within ${healthCheckMs} ms`));
        return;
      }
      checking = current;
      current.query("select 1").then(
        () => {
          if (checking === current) checking = null;
        },
        (error: unknown) => drop(current, error),
      );
    }, healthCheckMs);
    healthTimer.unref?.();
  }

  return {
    subscribe(subscriber) {
      subscribers.add(subscriber);
      start();
      return () => {
        subscribers.delete(subscriber);
      };
    },
    get connected() {
      return connected;
    },
    async close() {
      closed = true;
      if (reconnectTimer) clearTimeout(reconnectTimer);
      if (healthTimer) clearInterval(healthTimer);
      subscribers.clear();
      const current = client;
      client = null;
      connected = false;
      if (current) {
        dropped.add(current);
        await current.end().catch(() => {});
      }
    },
  };
}

// Next.js dev reloads modules; the listener (and its connection) must survive that.
const globalForLive = globalThis as unknown as { __clupilotLive?: LiveListener };

/** THE listener of this server process. */
export function getLiveListener(): LiveListener {
  globalForLive.__clupilotLive ??= createLiveListener({ connectionString: databaseUrl });
  return globalForLive.__clupilotLive;
}
