import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { NotificationMessage } from "../message";
import { FORMATS, renderRequest, type NotificationFormat } from ".";
import { headerText } from "./ntfy";
import { templateProblem } from "./template";

const FIXTURES = path.resolve(import.meta.dirname, "../../../test/fixtures/notifications");

type Fixture = {
  source: string;
  template?: string;
  templateEscape?: "json" | "none";
  request: { headers: Record<string, string>; body: unknown };
};

function fixture(name: string): Fixture {
  return JSON.parse(readFileSync(path.join(FIXTURES, `${name}.json`), "utf8")) as Fixture;
}

const message = JSON.parse(
  readFileSync(path.join(FIXTURES, "message.json"), "utf8"),
) as NotificationMessage;

function render(format: NotificationFormat, recorded: Fixture) {
  const request = renderRequest(format, message, {
    template: recorded.template ?? null,
    templateEscape: recorded.templateEscape ?? "json",
    templateContentType: null,
  });
  const isJson = request.headers["content-type"] === "application/json";
  return { headers: request.headers, body: isJson ? JSON.parse(request.body) : request.body };
}

describe("each format's payload", () => {
  it.each(FORMATS)("%s matches its recorded example, which names the page it follows", (format) => {
    const recorded = fixture(format);
    expect(recorded.source).toMatch(/^(https:\/\/|docs\/)/);
    expect(render(format, recorded)).toEqual(recorded.request);
  });
});

describe("a custom template", () => {
  it("escapes an event's quotes, backslashes and newlines inside a JSON body, so it stays JSON", () => {
    const nasty = { ...message, text: 'line 1\nline "2" \\ </script>' };
    const request = renderRequest("template", nasty, {
      template: '{"t": "{{text}}"}',
      templateEscape: "json",
      templateContentType: null,
    });
    expect(JSON.parse(request.body)).toEqual({ t: nasty.text });
  });

  it("leaves text as it is with escape none, and takes the content type it is given", () => {
    const request = renderRequest("template", message, {
      template: "{{severityUpper}} {{title}}",
      templateEscape: "none",
      templateContentType: "text/markdown",
    });
    expect(request).toEqual({
      headers: { "content-type": "text/markdown" },
      body: "CRITICAL On battery: ups-a",
    });
  });

  it("is refused when it does not parse, saying why", () => {
    expect(templateProblem("{{#open}} never closed")).toMatch(/Unclosed section/);
    expect(templateProblem("{{title}}")).toBeNull();
  });
});

describe("ntfy headers", () => {
  it("send a title with non-ASCII characters as an RFC 2047 encoded word", () => {
    expect(headerText("Netz zurück: ups-ä")).toBe(
      `=?UTF-8?B?${Buffer.from("Netz zurück: ups-ä").toString("base64")}?=`,
    );
    expect(headerText("two\nlines")).toBe("two lines");
  });
});
