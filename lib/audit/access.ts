import type { Role } from "@/lib/roles";

/**
 * Who may read the audit log: operators and admins, not viewers. Operators act on hosts at
 * 3 a.m. and need to see who else retried or aborted what (and whether it worked) without waking
 * an admin; the log holds no secrets, only names, targets and outcomes. Viewers are read-only
 * observers of the fleet (dashboards, support staff), and the log also tells who signs in when
 * and which accounts and tokens exist, which is more than watching hosts needs.
 */
export const AUDIT_READER_ROLE: Role = "operator";
