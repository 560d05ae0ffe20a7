/**
 * "The database is away" as one test, for every process of the console: the worker keeps
 * running through it, the web server answers 503 while it lasts. A restart, a crash or a network
 * cut of PostgreSQL all surface as one of these errors, from `pg` or wrapped by drizzle
 * (`cause`) or graphile-worker (AggregateError).
 */

/** Socket errors of a connection that could not be made or broke. */
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/**
 * SQLSTATEs of a server that is going away or not there yet: admin_shutdown (fast stop, or an
 * administrator ending the session), crash_shutdown, cannot_connect_now (starting up, shutting
 * down, in recovery); class 08 is the connection-exception class.
 */
const SERVER_CODES = new Set(["57P01", "57P02", "57P03"]);
const CONNECTION_EXCEPTION = /^08[0-9A-Z]{3}$/;

/** What `pg` says to a query on a client whose connection broke earlier. */
const BROKEN_CLIENT_MESSAGE = "Client has encountered a connection error and is not queryable";

/** What `pg` and `pg-pool` say when the socket closed under them (these errors carry no code). */
const DRIVER_MESSAGES = [
  "Connection terminated",
  BROKEN_CLIENT_MESSAGE,
  "timeout exceeded when trying to connect",
];

/**
 * Socket codes only count on the error itself or under the wrappers a database error comes in
 * (drizzle's failed query, an AggregateError): an SSH or HTTP failure keeps its socket error as
 * `cause` too, and a refused SSH login must never read as "the database is away".
 */
export function isDatabaseUnreachable(error: unknown): boolean {
  const seen = new Set<unknown>();
  const pending: { error: unknown; direct: boolean }[] = [{ error, direct: true }];
  while (pending.length > 0) {
    const { error: current, direct } = pending.pop()!;
    if (!current || typeof current !== "object" || seen.has(current)) continue;
    seen.add(current);
    const { code, message, cause, errors } = current as {
      code?: unknown;
      message?: unknown;
      cause?: unknown;
      errors?: unknown;
    };
    if (typeof code === "string") {
      if (SERVER_CODES.has(code) || CONNECTION_EXCEPTION.test(code)) return true;
      if (direct && NETWORK_CODES.has(code)) return true;
    }
    if (typeof message === "string" && DRIVER_MESSAGES.some((m) => message.startsWith(m))) {
      return true;
    }
    pending.push({ error: cause, direct: direct && isFailedQuery(current) });
    if (Array.isArray(errors)) {
      for (const inner of errors as unknown[]) pending.push({ error: inner, direct });
    }
  }
  return false;
}

/** drizzle's DrizzleQueryError ("Failed query: …", the driver's error as `cause`). */
function isFailedQuery(error: object): boolean {
  return typeof (error as { query?: unknown }).query === "string" && "params" in error;
}

/**
 * A query on a client that lost its connection earlier (a transaction held across a restart):
 * the aftermath of a loss already reported when it happened, not news about the database now.
 */
export function isAftermathOfLoss(error: unknown): boolean {
  for (let current = error, depth = 0; current && depth < 4; depth++) {
    if ((current as { message?: unknown }).message === BROKEN_CLIENT_MESSAGE) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** What a browser or an API client is told while the database is away (503). */
export const DATABASE_UNREACHABLE_MESSAGE =
  "The console's database is unreachable (restarting or down); the console keeps retrying by itself. Try again in a few seconds; if it lasts, check the database and the server log.";
