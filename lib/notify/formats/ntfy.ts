import type { Severity } from "../message";
import { TEXT_CONTENT_TYPE, type Formatter } from "./request";

/** ntfy priorities 1–5 (https://docs.ntfy.sh/publish/#message-priority): default, high, urgent. */
const PRIORITY: Record<Severity, string> = { info: "3", warning: "4", critical: "5" };
/** Tags that ntfy shows as emojis (https://docs.ntfy.sh/publish/#tags-emojis). */
const TAGS: Record<Severity, string> = {
  info: "information_source",
  warning: "warning",
  critical: "rotating_light",
};

/**
 * ntfy publish (https://docs.ntfy.sh/publish/): POST to the topic's URL, the message as the body,
 * Title / Priority / Tags as headers. A header carries only ASCII; a title with other characters
 * goes as an RFC 2047 encoded word, which ntfy decodes (same page, "non-ASCII headers").
 */
export const ntfyFormat: Formatter = (message) => ({
  headers: {
    "content-type": TEXT_CONTENT_TYPE,
    title: headerText(message.title),
    priority: PRIORITY[message.severity],
    tags: `${TAGS[message.severity]},${message.kind.replaceAll(/[^a-z0-9_.-]/gi, "_")}`,
  },
  body: message.text,
});

export function headerText(text: string): string {
  const oneLine = text.replaceAll(/[\r\n]+/g, " ");
  if (/^[\x20-\x7e]*$/.test(oneLine)) return oneLine;
  return `=?UTF-8?B?${Buffer.from(oneLine, "utf8").toString("base64")}?=`;
}
