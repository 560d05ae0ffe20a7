import path from "node:path";
import { CONSOLE_SLOT } from "./support/console-slot";

/** The admin e2e/global-setup.ts creates through /setup; every spec runs signed in as it. */
export const E2E_ADMIN = { name: "e2e-admin", password: "e2e admin password, long enough" };

/**
 * Where the admin's signed-in browser state for the console of `slot` is kept between global
 * setup and the specs: inside this checkout (git-ignored), so two checkouts testing on one
 * machine never sign each other out.
 */
export const storageStateOf = (slot: string) =>
  path.join(import.meta.dirname, ".auth", `admin-storage-state-${slot}.json`);

/** This worker's: the admin of its own console (e2e/support/console-slot.ts). */
export const E2E_STORAGE_STATE = storageStateOf(CONSOLE_SLOT);
