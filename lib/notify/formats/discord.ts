import type { Severity } from "../message";
import { clip, jsonRequest, severityLabel, type Formatter } from "./request";

/** Embed colours (decimal RGB, as Discord takes them): blue, amber, red. */
const COLOURS: Record<Severity, number> = { info: 3447003, warning: 15844367, critical: 15158332 };

/**
 * Discord "Execute Webhook" (https://discord.com/developers/docs/resources/webhook#execute-webhook):
 * `content` (≤ 2000 characters) and one embed (title ≤ 256, description ≤ 4096). Mentions are
 * turned off (`allowed_mentions.parse: []`): an event's text with "@everyone" pings nobody.
 */
export const discordFormat: Formatter = (message) =>
  jsonRequest({
    content: clip(`[${severityLabel(message.severity)}] ${message.title}`, 2000),
    embeds: [
      {
        title: clip(message.title, 256),
        description: clip(message.text, 4096),
        color: COLOURS[message.severity],
        timestamp: message.at,
        fields: [
          { name: "Severity", value: severityLabel(message.severity), inline: true },
          { name: "Event", value: message.kind, inline: true },
        ],
        footer: { text: "CluPilot" },
      },
    ],
    allowed_mentions: { parse: [] },
  });
