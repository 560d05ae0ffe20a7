import { severityLabel, TEXT_CONTENT_TYPE, type Formatter } from "./request";

/** Plain text for anything that takes a body and shows it: three lines. */
export const textFormat: Formatter = (message) => ({
  headers: { "content-type": TEXT_CONTENT_TYPE },
  body: `[${severityLabel(message.severity)}] ${message.title}\n${message.text}\n${message.kind} at ${message.at}\n`,
});
