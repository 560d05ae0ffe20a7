import { clip, jsonRequest, severityLabel, type Formatter } from "./request";

/**
 * Slack incoming webhook (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks):
 * `text` is the notification's fallback, `blocks` what the channel shows. Slack's mrkdwn
 * reserves &, < and > (https://docs.slack.dev/messaging/formatting-message-text#escaping):
 * escaped so an event's words can never become a link or a mention.
 */
export const slackFormat: Formatter = (message) => {
  const text = `[${severityLabel(message.severity)}] ${message.title}: ${message.text}`;
  return jsonRequest({
    text: escapeSlack(text),
    blocks: [
      {
        type: "header",
        // A header is plain_text of at most 150 characters.
        text: { type: "plain_text", text: clip(message.title, 150) },
      },
      {
        type: "section",
        text: { type: "mrkdwn", text: clip(escapeSlack(message.text), 3000) },
      },
      {
        type: "context",
        elements: [
          {
            type: "mrkdwn",
            text: escapeSlack(
              `${severityLabel(message.severity)} · ${message.kind} · ${message.at} · CluPilot`,
            ),
          },
        ],
      },
    ],
  });
};

export function escapeSlack(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}
