import { z } from "zod";
import { FORMATS } from "./formats";
import { templateProblem } from "./formats/template";
import { ZSeverity } from "./message";

/** Headers a target may not set itself: the request's framing and content type are ours. */
const RESERVED_HEADERS = new Set([
  "host",
  "content-length",
  "content-type",
  "transfer-encoding",
  "connection",
]);

const ZName = z
  .string({ error: "Enter a name." })
  .trim()
  .min(1, "Enter a name.")
  .max(80, "At most 80 characters.");

const ZUrl = z
  .string({ error: "Enter the webhook URL." })
  .trim()
  .min(1, "Enter the webhook URL.")
  .max(2000, "At most 2000 characters.")
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === "https:" || url.protocol === "http:") && url.hostname !== "";
    } catch {
      return false;
    }
  }, "Enter a full http:// or https:// URL, as the service gave it.");

/** `ups.on_battery`, a family `ups.*`, or a kind of one word. */
const ZEventKind = z
  .string()
  .trim()
  .regex(
    /^[a-z0-9_-]+(\.([a-z0-9_-]+|\*))?$/,
    "An event kind like ups.on_battery, or ups.* for every UPS event.",
  );

const ZHeaderName = z
  .string()
  .trim()
  .max(100, "At most 100 characters.")
  .regex(
    /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/,
    "A header name: letters, digits and - only (e.g. Authorization).",
  )
  .refine(
    (name) => !RESERVED_HEADERS.has(name.toLowerCase()),
    "The console sets this header itself; choose another.",
  );

const ZHeaderValue = z
  .string()
  .max(4000, "At most 4000 characters.")
  .refine((value) => !/[\r\n\0]/.test(value), "A header value is one line.");

const ZContentType = z
  .string()
  .trim()
  .max(100)
  .regex(
    /^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/,
    "A media type like application/json or text/plain; charset=utf-8.",
  );

/** Form fields arrive as strings: "" is "not given". */
const blankToUndefined = (value: unknown) => (value === "" || value === null ? undefined : value);

const shared = {
  template: z.preprocess(
    blankToUndefined,
    z.string().max(20_000, "At most 20,000 characters.").optional(),
  ),
  templateEscape: z.enum(["json", "none"]).default("json"),
  templateContentType: z.preprocess(blankToUndefined, ZContentType.optional()),
  minSeverity: ZSeverity.default("warning"),
  eventKinds: z.array(ZEventKind).max(60, "At most 60 kinds.").default([]),
  authHeaderName: z.preprocess(blankToUndefined, ZHeaderName.optional()),
  enabled: z.boolean().default(true),
};

type TemplateFields = { format?: string; template?: string };

function checkTemplate(data: TemplateFields, ctx: z.RefinementCtx) {
  if (data.format !== "template") return;
  if (!data.template) {
    ctx.addIssue({
      code: "custom",
      path: ["template"],
      message: "Enter the template of the body.",
    });
    return;
  }
  const problem = templateProblem(data.template);
  if (problem)
    ctx.addIssue({
      code: "custom",
      path: ["template"],
      message: `Not a valid template: ${problem}`,
    });
}

export const ZCreateNotificationTarget = z
  .object({
    name: ZName,
    format: z.enum(FORMATS, { error: "Choose a format." }),
    url: ZUrl,
    ...shared,
    authHeaderValue: z.preprocess(blankToUndefined, ZHeaderValue.optional()),
  })
  .superRefine((data, ctx) => {
    checkTemplate(data, ctx);
    if (data.authHeaderName && !data.authHeaderValue) {
      ctx.addIssue({
        code: "custom",
        path: ["authHeaderValue"],
        message: "Enter the header's value, or leave its name empty.",
      });
    }
    if (!data.authHeaderName && data.authHeaderValue) {
      ctx.addIssue({
        code: "custom",
        path: ["authHeaderName"],
        message: "Enter the header's name (e.g. Authorization).",
      });
    }
  });

/**
 * A change: what is left out stays. The URL and the auth header's value are write-only: left
 * out, the stored ones stay; `removeAuthHeader` drops the header.
 */
export const ZUpdateNotificationTarget = z
  .object({
    id: z.uuid({ error: "Which target? (its id)" }),
    name: ZName.optional(),
    format: z.enum(FORMATS).optional(),
    url: z.preprocess(blankToUndefined, ZUrl.optional()),
    template: shared.template,
    templateEscape: z.enum(["json", "none"]).optional(),
    templateContentType: shared.templateContentType,
    minSeverity: ZSeverity.optional(),
    eventKinds: z.array(ZEventKind).max(60).optional(),
    authHeaderName: shared.authHeaderName,
    authHeaderValue: z.preprocess(blankToUndefined, ZHeaderValue.optional()),
    removeAuthHeader: z.boolean().default(false),
    enabled: z.boolean().optional(),
  })
  .superRefine(checkTemplate);

export const ZNotificationTargetRef = z.object({ id: z.uuid({ error: "Which target? (its id)" }) });

export const ZAcknowledgeDeliveries = z.object({
  targetId: z.uuid({ error: "Which target? (its id)" }),
});

export type CreateNotificationTarget = z.infer<typeof ZCreateNotificationTarget>;
export type UpdateNotificationTarget = z.infer<typeof ZUpdateNotificationTarget>;
