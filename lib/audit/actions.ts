import { z } from "zod";

/** Every audited action, named `<subject>.<verb>`; the audit page filters on these. */
export const AUDIT_ACTIONS = [
  "auth.setup",
  "auth.sign_in",
  "auth.sign_out",
  "auth.sign_out_others",
  "access.denied",
  "user.create",
  "user.role_change",
  "user.disable",
  "user.enable",
  "user.password_change",
  "token.create",
  "token.revoke",
  "host.create",
  "host.edit",
  "host.clear_pin",
  "host.reonboard",
  "host.decommission",
  "host.delete",
  "run.retry",
  "run.abort",
  "catalog.plan_create",
  "catalog.version_create",
  "catalog.version_publish",
  "console_key.rotate",
  "secrets.rotate",
  "power.arm",
  "power.disarm",
  "power.settings_update",
  "power.ups_create",
  "power.ups_update",
  "power.ups_delete",
  "power.target_create",
  "power.target_update",
  "power.target_delete",
  "power.latch_release",
  "power.event_acknowledge",
] as const;

export const ZAuditAction = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof ZAuditAction>;
