import { AppError } from "@/lib/errors";
import type { TUpsSourceConfig } from "../ups/reading";
import { checkNutLogin } from "../ups/nut/check-login";

/** Tries a UPS's settings before they are saved; throws an AppError (400) saying what to fix. */
export type UpsSourceCheck = (config: TUpsSourceConfig) => Promise<void>;

/**
 * What saving a UPS checks first (issue 29, item 16): a NUT source must let the console log in
 * as the monitor will (lib/power/ups/nut/check-login.ts) — else 400 with the field errors under
 * `source.*`, and nothing is saved. An SNMP source is saved untested, as before: its problems
 * show on the UPS card within a poll.
 */
export const checkUpsSource: UpsSourceCheck = async (config) => {
  if (config.type !== "nut") return;
  const refused = await checkNutLogin(config);
  if (refused === null) return;
  throw new AppError(
    "invalid_input",
    refused.message,
    Object.fromEntries(
      Object.entries(refused.fieldErrors).map(([field, errors]) => [`source.${field}`, errors]),
    ),
  );
};
