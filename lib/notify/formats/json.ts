import { jsonRequest, type Formatter } from "./request";

/** Our own schema's name and version; docs/notifications.md describes every field. */
export const JSON_SCHEMA_ID = "clupilot.notification/v1";

export const jsonFormat: Formatter = (message) =>
  jsonRequest({
    schema: JSON_SCHEMA_ID,
    id: message.id,
    source: message.source,
    kind: message.kind,
    severity: message.severity,
    title: message.title,
    text: message.text,
    at: message.at,
    subject: message.subject,
    data: message.data,
  });
