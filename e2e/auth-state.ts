import path from "node:path";

/** The admin e2e/global-setup.ts creates through /setup; every spec runs signed in as it. */
export const E2E_ADMIN = { name: "e2e-admin", password: "e2e admin password, long enough" };

/**
 * Where the admin's signed-in browser state is kept between global setup and the specs: inside
 * this checkout (git-ignored), so two checkouts testing on one machine never sign each other out.
 */
export const E2E_STORAGE_STATE = path.join(
  import.meta.dirname,
  ".auth",
  "admin-storage-state.json",
);
