/** The variable through which a supervised child learns its supervisor's pid. */
export const SUPERVISOR_PID_ENV = "CLUPILOT_SUPERVISOR_PID";

/** The preload that ends a child whose supervisor is gone, relative to the repository root. */
export const END_WITH_SUPERVISOR_IMPORT = "./lib/supervisor/end-with-supervisor.ts";
