import Mustache from "mustache";
import { JSON_CONTENT_TYPE, TEXT_CONTENT_TYPE, type Formatter } from "./request";

/**
 * A custom body from a mustache template: logic-less, so a template cannot run code, and every
 * `{{name}}` goes through the target's escape — inside a JSON string (`json`, the default) an
 * event's quotes and newlines cannot break the document; `none` for plain text bodies.
 * `{{{name}}}` is mustache's unescaped form, for whoever wants it on purpose.
 */
export const templateFormat: Formatter = (message, settings) => {
  if (!settings.template) throw new Error("This target has no template; edit it and add one.");
  const escape =
    settings.templateEscape === "json" ? escapeJsonString : (value: unknown) => String(value);
  const body = Mustache.render(
    settings.template,
    { ...message, severityUpper: message.severity.toUpperCase() },
    {},
    { escape },
  );
  const contentType =
    settings.templateContentType ??
    (settings.templateEscape === "json" ? JSON_CONTENT_TYPE : TEXT_CONTENT_TYPE);
  return { headers: { "content-type": contentType }, body };
};

/** A value as the inside of a JSON string literal (no surrounding quotes). */
export function escapeJsonString(value: unknown): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  return JSON.stringify(text).slice(1, -1);
}

/** Why a template cannot be used, or null: an unclosed section or tag. */
export function templateProblem(template: string): string | null {
  try {
    Mustache.parse(template);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}
