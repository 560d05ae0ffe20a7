export type AppErrorCode =
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "invalid_input"
  | "rate_limited"
  | "unavailable";

const HTTP_STATUS: Record<AppErrorCode, number> = {
  unauthenticated: 401,
  forbidden: 403,
  rate_limited: 429,
  not_found: 404,
  conflict: 409,
  invalid_input: 400,
  unavailable: 503,
};

/**
 * An error the user can act on. Its message is shown as is in the UI and the JSON API, so it
 * says what happened and what to do next, and never contains a secret.
 */
export class AppError extends Error {
  constructor(
    readonly code: AppErrorCode,
    message: string,
    readonly fieldErrors?: Record<string, string[]>,
  ) {
    super(message);
    this.name = "AppError";
  }

  get httpStatus(): number {
    return HTTP_STATUS[this.code];
  }
}

/** Postgres unique_violation: a concurrent request took the same unique value first. */
export function isUniqueViolation(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    if ((current as { code?: unknown }).code === "23505") return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * One line about an unexpected error for the server log. Drizzle puts the query parameters in
 * its error messages ("Failed query: … params: …"), and for a new host those include the sealed
 * credential, so the parameters are cut off and the driver's own message is used instead.
 */
export function safeErrorSummary(error: unknown): string {
  if (!(error instanceof Error)) return "non-error value thrown";
  const cause = error.cause instanceof Error ? error.cause : null;
  const message = (cause ?? error).message.split(/\n\s*params:/)[0] ?? "";
  const name = (cause ?? error).name;
  const code = (cause as { code?: unknown } | null)?.code ?? (error as { code?: unknown }).code;
  return `${name}${typeof code === "string" ? ` [${code}]` : ""}: ${message.slice(0, 500)}`;
}
