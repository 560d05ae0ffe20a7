import { expect } from "vitest";
import { AppError } from "@/lib/errors";

/**
 * The AppError a domain operation refused with: fails the test if the promise resolves or
 * rejects with anything else (an unexpected error would be a bug, not a refusal).
 */
export async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}
