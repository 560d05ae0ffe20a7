import { describe, expect, it } from "vitest";
import { ZUpdateNotificationTarget } from "@/lib/notify/schemas";
import { notifyFormInput } from "./form-input";

function form(entries: [string, string][]): FormData {
  const data = new FormData();
  for (const [key, value] of entries) data.append(key, value);
  return data;
}

describe("the notification target form", () => {
  it("joins ticked kinds and typed ones, and reads an unticked box on an edit form as off", () => {
    const input = notifyFormInput(
      form([
        ["id", "0b8a5c1e-9d0c-4c4e-8f57-2f1f3c1d2e3f"],
        ["checkboxes", "yes"],
        ["eventKinds", "ups.on_battery"],
        ["eventKinds", "shutdown.failed"],
        ["extraEventKinds", "self-test.*, cluster.prepared ups.on_battery"],
        ["url", ""],
      ]),
    );
    expect(input).toMatchObject({
      eventKinds: ["ups.on_battery", "shutdown.failed", "self-test.*", "cluster.prepared"],
      enabled: false,
      removeAuthHeader: false,
    });
    // An empty URL keeps the stored one: the schema leaves it out.
    expect(ZUpdateNotificationTarget.parse(input).url).toBeUndefined();
  });

  it("passes a JSON body through untouched", () => {
    const body = { name: "x", eventKinds: [] };
    expect(notifyFormInput(body)).toBe(body);
  });
});
