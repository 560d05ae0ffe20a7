import { z } from "zod";

/** Proxmox accepts VMIDs from 100 to 999 999 999. */
export const ZVmid = z.preprocess(
  (value) => (value === "" || value === null || typeof value === "boolean" ? undefined : value),
  z.coerce
    .number({ error: "Enter a VMID." })
    .int("A VMID is a whole number.")
    .min(100, "Proxmox VMIDs start at 100.")
    .max(999_999_999, "Proxmox VMIDs end at 999999999."),
);

export const ZCreatePlan = z.object({
  slug: z
    .string()
    .trim()
    .min(1, "Enter a short identifier.")
    .max(40, "At most 40 characters.")
    .regex(
      /^[a-z0-9]+(-[a-z0-9]+)*$/,
      "Lower-case letters, digits and inner hyphens (e.g. vps-small).",
    ),
  name: z.string().trim().min(1, "Enter the name customers see.").max(80, "At most 80 characters."),
});
export type TCreatePlan = z.infer<typeof ZCreatePlan>;

const optionalDate = z.preprocess(
  (value) => (value === "" || value === null ? undefined : value),
  z.coerce.date({ error: "Enter a date and time." }).optional(),
);

export const ZCreatePlanVersion = z
  .object({
    planId: z.uuid({ error: "Choose a plan." }),
    templateVmid: ZVmid,
    cores: z.coerce
      .number()
      .int("Whole cores only.")
      .min(1, "At least 1 core.")
      .max(512, "At most 512 cores."),
    memoryMib: z.coerce
      .number()
      .int()
      .min(256, "At least 256 MiB.")
      .max(4_194_304, "At most 4 TiB."),
    diskGib: z.coerce.number().int().min(1, "At least 1 GiB.").max(65_536, "At most 64 TiB."),
    saleStartsAt: optionalDate,
    saleEndsAt: optionalDate,
  })
  .superRefine((value, ctx) => {
    if (value.saleStartsAt && value.saleEndsAt && value.saleEndsAt <= value.saleStartsAt) {
      ctx.addIssue({
        code: "custom",
        path: ["saleEndsAt"],
        message: "The sale must end after it starts.",
      });
    }
  });
export type TCreatePlanVersion = z.infer<typeof ZCreatePlanVersion>;

export const ZPublishPlanVersion = z.object({
  planVersionId: z.uuid({ error: "Not a plan version id." }),
});
