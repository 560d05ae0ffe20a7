import type { z } from "zod";
import { AppError } from "@/lib/errors";
import { INVALID_INPUT_MESSAGE } from "./respond";

/**
 * Field errors keyed by the full path of the field (`source.host`, `triggers.chargeBelowPercent`),
 * for inputs with nested objects: the flat form would report every nested error as `source`.
 * Form inputs are named the same way, so each error lands under its own control.
 */
export function pathFieldErrors(error: z.ZodError): Record<string, string[]> {
  const errors: Record<string, string[]> = {};
  for (const issue of error.issues) {
    const key = issue.path.length > 0 ? issue.path.map(String).join(".") : "input";
    (errors[key] ??= []).push(issue.message);
  }
  return errors;
}

/** Parses input with nested objects; bad input is a 400 whose field errors name full paths. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) {
    throw new AppError("invalid_input", INVALID_INPUT_MESSAGE, pathFieldErrors(result.error));
  }
  return result.data;
}
