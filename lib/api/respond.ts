import { z } from "zod";
import { DATABASE_UNREACHABLE_MESSAGE, isDatabaseUnreachable } from "@/lib/db/unreachable";
import { AppError, safeErrorSummary } from "@/lib/errors";

export { safeErrorSummary };
import { fieldErrors as zodFieldErrors } from "@/lib/hosts/schemas";

/**
 * What a failed request tells its caller. The server actions and the JSON API both describe
 * errors through `describeError`, so a user sees the same words whichever door they came in by.
 */
export type ErrorDescription = z.infer<typeof ZErrorAnswer> & { status: number };

/** The JSON API's error answer, as every route sends it (and the API document describes it). */
export const ZErrorAnswer = z.object({
  /** Shown to the user as is: says what happened and what to do next, never a secret. */
  error: z.string().describe("What happened and what to do next."),
  fieldErrors: z
    .record(z.string(), z.array(z.string()))
    .describe("Each refused field (by its name or path) with why."),
});

export const INVALID_INPUT_MESSAGE = "Some fields need attention.";
export const UNEXPECTED_MESSAGE =
  "Something went wrong on the server. Try again; if it keeps happening, check the server log.";

/**
 * Maps any thrown value to a status and a user-facing message:
 * - zod error (bad input)            → 400 with the field errors
 * - AppError (the domain refused)    → its own status, message and field errors
 * - the database is away             → 503 saying so (a request that raced the web server's gate)
 * - anything else (a bug)            → 500 with a generic message; details go to the server log
 */
export function describeError(error: unknown, context: string): ErrorDescription {
  if (error instanceof z.ZodError) {
    return { status: 400, error: INVALID_INPUT_MESSAGE, fieldErrors: zodFieldErrors(error) };
  }
  if (error instanceof AppError) {
    return { status: error.httpStatus, error: error.message, fieldErrors: error.fieldErrors ?? {} };
  }
  if (isUnstorableText(error)) {
    return { status: 400, error: UNSTORABLE_TEXT_MESSAGE, fieldErrors: {} };
  }
  if (isDatabaseUnreachable(error)) {
    console.error(`${context} answered 503, the database is away: ${safeErrorSummary(error)}`);
    return { status: 503, error: DATABASE_UNREACHABLE_MESSAGE, fieldErrors: {} };
  }
  console.error(`${context} failed: ${safeErrorSummary(error)}`);
  return { status: 500, error: UNEXPECTED_MESSAGE, fieldErrors: {} };
}

export const UNSTORABLE_TEXT_MESSAGE =
  "Some text contains a character the console cannot store (a NUL byte or broken Unicode). Remove it and try again.";

/**
 * Postgres refusing a text value itself (22021: a NUL byte; 22P05: not representable in UTF-8).
 * Only input can carry such text, so it is the user's to fix (400), wherever a schema let it by.
 */
function isUnstorableText(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === "22021" || code === "22P05") return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** A JSON response that no cache keeps. */
export function json(body: unknown, status = 200): Response {
  return Response.json(body, { status, headers: { "Cache-Control": "no-store" } });
}

/** The JSON API's error response: `{ error, fieldErrors }` with the mapped status. */
export function respondError(error: unknown, context: string): Response {
  const { status, error: message, fieldErrors } = describeError(error, context);
  return json({ error: message, fieldErrors }, status);
}

/** Reads a JSON request body; a body that is not JSON is bad input (400), not a server error. */
export async function readJson(request: Request): Promise<unknown> {
  try {
    return await request.json();
  } catch {
    throw new AppError("invalid_input", "The request body is not valid JSON.");
  }
}

/**
 * Parses a path parameter that must be a uuid. A malformed id names nothing, so it is answered
 * like any bad input (400) before Postgres can reject the cast with a 500.
 */
export function parseId(schema: z.ZodType<string>, value: unknown, field: string): string {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new AppError(
      "invalid_input",
      result.error.issues[0]?.message ?? `Not a valid ${field}.`,
      {
        [field]: result.error.issues.map((issue) => issue.message),
      },
    );
  }
  return result.data;
}
