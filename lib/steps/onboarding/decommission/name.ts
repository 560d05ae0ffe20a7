/** The decommission pipeline's name as stored on its runs (a leaf module: host-state reads it). */
export const DECOMMISSION_HOST = "decommission-host";
