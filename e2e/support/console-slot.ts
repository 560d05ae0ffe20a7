/**
 * Playwright runs the spec files in more than one worker; each worker has a console of its own
 * (global setup starts one per worker), so no spec shares a console with a spec running at the
 * same moment. A worker's slot is its parallel index (0 … workers − 1, kept by the worker that
 * replaces one ended by a failure).
 */
export const CONSOLE_SLOT = process.env.TEST_PARALLEL_INDEX ?? "0";

/** What global setup says about each console, as `<name>_<slot>`; specs read `<name>`. */
export const CONSOLE_ENV = [
  "E2E_BASE_URL",
  "E2E_DATA_DIR",
  "E2E_DATABASE_URL",
  "CLUPILOT_DATA_DIR",
] as const;

/** Points this worker's `E2E_*` variables at its slot's console (a no-op before global setup). */
export function pointAtConsoleOfSlot(): void {
  for (const name of CONSOLE_ENV) {
    const value = process.env[`${name}_${CONSOLE_SLOT}`];
    if (value !== undefined) process.env[name] = value;
  }
}
