import { describeError } from "@/lib/api/respond";

/** What every server action returns: it never throws for user input, never surfaces a 500. */
export type ActionResult<T extends object = object> =
  ({ ok: true } & T) | { ok: false; message: string; fieldErrors: Record<string, string[]> };

export function actionFailure(
  error: unknown,
  context: string,
): { ok: false; message: string; fieldErrors: Record<string, string[]> } {
  const { error: message, fieldErrors } = describeError(error, context);
  return { ok: false, message, fieldErrors };
}

/** FormData and plain objects alike, as a plain object for zod (repeated keys: the last wins). */
export function inputObject(input: FormData | Record<string, unknown>): Record<string, unknown> {
  if (!(input instanceof FormData)) return input;
  const object: Record<string, unknown> = {};
  for (const [key, value] of input.entries()) {
    if (key.startsWith("$ACTION")) continue; // React's own bookkeeping fields
    object[key] = typeof value === "string" ? value : undefined;
  }
  return object;
}
