import { z } from "zod";
import { ZRole } from "@/lib/roles";

/** Sign-in names: what an operator types at 3 a.m., so short and plain. */
export const ZUserName = z
  .string({ error: "Enter a user name." })
  .trim()
  .min(1, "Enter a user name.")
  .max(64, "At most 64 characters.")
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    "Letters, digits, dots, hyphens and underscores, starting with a letter or digit.",
  );

/** New passwords: length is what matters (NIST 800-63B); no composition rules. */
export const ZNewPassword = z
  .string({ error: "Enter a password." })
  .min(12, "At least 12 characters.")
  .max(1024, "At most 1024 characters.");

/** A password being checked: any non-empty string, bounded so nobody hashes megabytes. */
export const ZPresentedPassword = z
  .string({ error: "Enter your password." })
  .min(1, "Enter your password.")
  .max(1024, "At most 1024 characters.");

export const ZSignIn = z.object({
  name: z.string({ error: "Enter your user name." }).trim().min(1, "Enter your user name.").max(64),
  password: ZPresentedPassword,
  next: z.string().max(2048).optional(),
});
export type TSignIn = z.infer<typeof ZSignIn>;

export const ZCompleteSetup = z.object({
  setupToken: z
    .string({ error: "Enter the setup token." })
    .trim()
    .min(1, "Enter the setup token printed by npm start.")
    .max(200, "That is not a setup token."),
  name: ZUserName,
  password: ZNewPassword,
});
export type TCompleteSetup = z.infer<typeof ZCompleteSetup>;

export const ZUserId = z.uuid({ error: "Not a user id." });
export const ZTokenId = z.uuid({ error: "Not a token id." });

export const ZCreateUser = z.object({ name: ZUserName, role: ZRole, password: ZNewPassword });
export type TCreateUser = z.infer<typeof ZCreateUser>;

export const ZChangeRole = z.object({ userId: ZUserId, role: ZRole });
export const ZSetUserDisabled = z.object({
  userId: ZUserId,
  disabled: z.preprocess(
    (value) => (value === "true" ? true : value === "false" ? false : value),
    z.boolean({ error: "Say true or false." }),
  ),
});
export const ZResetPassword = z.object({ userId: ZUserId, password: ZNewPassword });
export const ZChangeOwnPassword = z.object({
  currentPassword: ZPresentedPassword,
  newPassword: ZNewPassword,
});

export const ZCreateToken = z.object({
  label: z
    .string({ error: "Give the token a label." })
    .trim()
    .min(1, "Give the token a label, e.g. the script that uses it.")
    .max(80, "At most 80 characters."),
});
export const ZRevokeToken = z.object({ tokenId: ZTokenId });

/** PATCH /api/users/:id: any of role, disabled, password (a reset), at least one. */
export const ZUpdateUser = z
  .object({
    role: ZRole.optional(),
    disabled: z.boolean({ error: "Say true or false." }).optional(),
    password: ZNewPassword.optional(),
  })
  .strict()
  .refine((change) => Object.keys(change).length > 0, {
    message: "Send at least one of role, disabled, password.",
  });
