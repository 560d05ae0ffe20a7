import type { NotificationMessage } from "../message";
import { discordFormat } from "./discord";
import { jsonFormat } from "./json";
import { ntfyFormat } from "./ntfy";
import type { Formatter, TemplateSettings, WebhookRequest } from "./request";
import { slackFormat } from "./slack";
import { teamsFormat } from "./teams";
import { templateFormat } from "./template";
import { textFormat } from "./text";

export const FORMATS = ["slack", "discord", "ntfy", "teams", "json", "text", "template"] as const;
export type NotificationFormat = (typeof FORMATS)[number];

const FORMATTERS: Record<NotificationFormat, Formatter> = {
  slack: slackFormat,
  discord: discordFormat,
  ntfy: ntfyFormat,
  teams: teamsFormat,
  json: jsonFormat,
  text: textFormat,
  template: templateFormat,
};

export const FORMAT_LABELS: Record<NotificationFormat, string> = {
  slack: "Slack (incoming webhook)",
  discord: "Discord (webhook)",
  ntfy: "ntfy (topic URL)",
  teams: "Microsoft Teams (Workflows / Adaptive Card)",
  json: "JSON (CluPilot schema)",
  text: "Plain text",
  template: "Custom template (mustache)",
};

export function renderRequest(
  format: NotificationFormat,
  message: NotificationMessage,
  settings: TemplateSettings,
): WebhookRequest {
  return FORMATTERS[format](message, settings);
}

export type { TemplateSettings, WebhookRequest };
