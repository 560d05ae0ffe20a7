import type { TNutSource } from "../reading";
import { NutConnection, NutFailure } from "./connection";

/** How long saving a UPS waits for upsd: connecting, logging in and reading, all together. */
export const NUT_LOGIN_CHECK_DEADLINE_MS = 5000;

type SourceField = "host" | "port" | "upsName" | "username" | "password";

/** Why the console could not log in with these settings, for the form and the JSON API. */
export type NutLoginRefusal = {
  /** What upsd answered and what to change; says that nothing was saved. */
  message: string;
  /** By field of the source, each saying what that field (or upsd.users) needs. */
  fieldErrors: Partial<Record<SourceField, string[]>>;
};

/**
 * Does what the monitor will do with these settings, once, before they are saved (issue 29,
 * item 16): connect to upsd, `USERNAME`, `PASSWORD`, `LOGIN <ups>` (the console logs in as a
 * secondary upsmon) and read the UPS, then `LOGOUT` — on a connection of its own
 * (NutConnection, the monitor's client), so a refusal is not left in the monitor's backoff.
 * Null when upsd took the login and knows the UPS; a refusal naming the field to fix otherwise.
 *
 * Measured against Debian's upsd (NUT 2.8.0): USERNAME and PASSWORD always answer OK, and LOGIN
 * answers ERR ACCESS-DENIED alike for a wrong password, an unknown user and a user without an
 * `upsmon` line in upsd.users — so that refusal names both fields. LOGIN answers ERR
 * UNKNOWN-UPS before it checks the user. A driver that is stale or not connected does not stop
 * the save: the login works, and the UPS card shows the driver's state.
 */
export async function checkNutLogin(
  source: TNutSource,
  deadlineMs = NUT_LOGIN_CHECK_DEADLINE_MS,
): Promise<NutLoginRefusal | null> {
  const username = source.username ?? "";
  const password = source.password ?? "";
  if ((username === "") !== (password === "")) {
    const missing = username === "" ? "username" : "password";
    return {
      message:
        "Nothing was saved: give both the NUT user name and its password (as in upsd.users), or neither to read without logging in.",
      fieldErrors: {
        [missing]: [
          missing === "password"
            ? "Enter this user's password from upsd.users (or clear the user name)."
            : "Enter the user this password belongs to in upsd.users (or clear the password).",
        ],
      },
    };
  }
  const connection = new NutConnection({
    host: source.host,
    port: source.port,
    ...(username === "" ? {} : { credentials: { username, password } }),
  });
  try {
    await connection.listVar(source.upsName, deadlineMs);
    return null;
  } catch (error) {
    if (!(error instanceof NutFailure)) throw error;
    return refusal(error, source, connection.where);
  } finally {
    await connection.close();
  }
}

function refusal(failure: NutFailure, source: TNutSource, where: string): NutLoginRefusal | null {
  const user = `"${source.username ?? ""}"`;
  switch (failure.kind) {
    case "refused":
    case "unresolved":
    case "unreachable":
    case "timeout":
    case "closed":
    case "protocol": {
      const portToo = failure.kind !== "unresolved" && failure.kind !== "unreachable";
      return {
        message: `Nothing was saved: the console could not talk to upsd with these settings — ${failure.message}.`,
        fieldErrors: {
          host: [failure.message],
          ...(portToo
            ? {
                port: [
                  "Check that upsd listens on this port (upsd.conf LISTEN; its default is 3493).",
                ],
              }
            : {}),
        },
      };
    }
    case "access-denied": {
      if (failure.command === "USERNAME" || failure.command === "PASSWORD") {
        const words = `${where} refused ${failure.command} (ERR ${failure.code}): check the user name and password against upsd.users.`;
        return {
          message: `Nothing was saved: ${words}`,
          fieldErrors: { username: [words], password: [words] },
        };
      }
      if (failure.command === "LIST") {
        return {
          message: `Nothing was saved: ${failure.message}.`,
          fieldErrors: {
            username: [`upsd took the login but refuses this user the UPS's variables.`],
          },
        };
      }
      return {
        message:
          `Nothing was saved: ${where} refused LOGIN ${source.upsName} for user ${user} (ERR ${failure.code ?? "ACCESS-DENIED"}). ` +
          `The console logs in as a secondary upsmon: upsd.users needs a section [${source.username ?? ""}] with this password and the line "upsmon secondary" (or "upsmon primary"). ` +
          "upsd gives this same answer for a wrong password, an unknown user and a user without that line. Fix upsd.users, reload upsd (upsd -c reload) and save again.",
        fieldErrors: {
          username: [
            `The user needs "upsmon secondary" (or "upsmon primary") in upsd.users: upsd refused its LOGIN.`,
          ],
          password: [
            `Or this is not ${user}'s password in upsd.users: upsd refuses LOGIN alike for both.`,
          ],
        },
      };
    }
    case "answer": {
      if (failure.code === "UNKNOWN-UPS") {
        return {
          message: `Nothing was saved: ${failure.message}.`,
          fieldErrors: {
            upsName: [
              `${where} serves no UPS named "${source.upsName}" (upsc -l ${source.host}:${source.port} lists them).`,
            ],
          },
        };
      }
      if (failure.code === "ACCESS-DENIED") {
        return {
          message: `Nothing was saved: ${failure.message}.`,
          fieldErrors: {
            username: [
              `upsd does not let this client read the UPS: give a user with "upsmon secondary" in upsd.users.`,
            ],
          },
        };
      }
      // Logged in and the UPS is known; only its driver has nothing to serve right now (the
      // UPS card will say so). The settings are right.
      return null;
    }
  }
}
