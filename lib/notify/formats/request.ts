import type { NotificationMessage, Severity } from "../message";

/** What a format makes of a message: the POST's headers (besides auth) and body. */
export type WebhookRequest = { headers: Record<string, string>; body: string };

export type TemplateSettings = {
  template: string | null;
  templateEscape: "json" | "none";
  templateContentType: string | null;
};

export type Formatter = (
  message: NotificationMessage,
  settings: TemplateSettings,
) => WebhookRequest;

export const JSON_CONTENT_TYPE = "application/json";
export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";

export function jsonRequest(payload: unknown): WebhookRequest {
  return { headers: { "content-type": JSON_CONTENT_TYPE }, body: JSON.stringify(payload) };
}

export function severityLabel(severity: Severity): string {
  return severity.toUpperCase();
}

/** Cuts text to a service's field limit, marking the cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
