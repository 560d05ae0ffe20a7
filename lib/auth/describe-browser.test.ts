import { describe, expect, it } from "vitest";
import { describeBrowser } from "./describe-browser";

describe("describeBrowser", () => {
  it("names browser, major version and system", () => {
    expect(
      describeBrowser(
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.7444.59 Safari/537.36",
      ),
    ).toBe("Chrome 142 on Linux");
    expect(
      describeBrowser(
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:145.0) Gecko/20100101 Firefox/145.0",
      ),
    ).toMatch(/^Firefox 145 on macOS/);
  });

  it("shows an unknown client's own words, and nothing for none", () => {
    expect(describeBrowser("curl/8.14.1")).toBe("curl/8.14.1");
    expect(describeBrowser(null)).toBeNull();
  });
});
