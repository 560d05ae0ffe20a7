export type AppErrorCode = "not_found" | "conflict" | "invalid_input" | "unavailable";

const HTTP_STATUS: Record<AppErrorCode, number> = {
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
