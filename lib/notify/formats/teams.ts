import type { Severity } from "../message";
import { jsonRequest, severityLabel, type Formatter } from "./request";

/** Adaptive Card text colours for a severity. */
const COLOURS: Record<Severity, string> = {
  info: "Accent",
  warning: "Warning",
  critical: "Attention",
};

/**
 * Microsoft Teams: a Workflows webhook ("Post to a channel when a webhook request is received")
 * or an incoming webhook takes a `message` whose one attachment is an Adaptive Card
 * (https://learn.microsoft.com/en-us/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using#send-adaptive-cards-using-an-incoming-webhook).
 * Version 1.4: the highest the Workflows card action renders. Connector MessageCards are retired.
 */
export const teamsFormat: Formatter = (message) =>
  jsonRequest({
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [
            {
              type: "TextBlock",
              text: message.title,
              weight: "Bolder",
              size: "Medium",
              color: COLOURS[message.severity],
              wrap: true,
            },
            { type: "TextBlock", text: message.text, wrap: true },
            {
              type: "FactSet",
              facts: [
                { title: "Severity", value: severityLabel(message.severity) },
                { title: "Event", value: message.kind },
                { title: "At", value: message.at },
              ],
            },
          ],
        },
      },
    ],
  });
