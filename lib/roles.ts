import { z } from "zod";

/** Ordered from least to most: each role can do everything the ones before it can. */
export const ROLES = ["viewer", "operator", "admin"] as const;
export const ZRole = z.enum(ROLES);
export type Role = z.infer<typeof ZRole>;

/** Whether a user holding `held` may do what needs `required`. */
export function hasRole(held: Role, required: Role): boolean {
  return ROLES.indexOf(held) >= ROLES.indexOf(required);
}
