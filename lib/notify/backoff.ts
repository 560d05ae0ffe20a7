/** Attempts of one delivery before it stays failed (about half an hour at the default base). */
export const DELIVERY_MAX_ATTEMPTS = 10;
export const DEFAULT_RETRY_BASE_MS = 5_000;
const RETRY_CAP_MS = 10 * 60_000;

/** Wait before attempt `failedAttempts + 1`: base, 2×, 4×, … capped at ten minutes. */
export function retryDelayMs(
  failedAttempts: number,
  baseMs: number = DEFAULT_RETRY_BASE_MS,
): number {
  return Math.min(baseMs * 2 ** Math.max(0, failedAttempts - 1), RETRY_CAP_MS);
}
