import { AppError } from "@/lib/errors";
import { readJson } from "./respond";

/**
 * A request body that must be a JSON object (a change with named fields). Anything else — an
 * array, a string, null — is bad input, not an empty change that quietly succeeds.
 */
export async function readJsonObject(request: Request): Promise<Record<string, unknown>> {
  const body = await readJson(request);
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new AppError(
      "invalid_input",
      "The request body must be a JSON object of the fields to change.",
    );
  }
  return body as Record<string, unknown>;
}
