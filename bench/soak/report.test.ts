import { format } from "prettier";
import { describe, expect, it } from "vitest";
import { markdownTable } from "./report";

describe("the soak's table", () => {
  it("is a Markdown table exactly as Prettier writes it, so it goes into docs/soak.md as is", async () => {
    const table = markdownTable(
      ["what", "result", "detail"],
      [
        ["fault: worker.kill9", "injected ×3", ""],
        ["never two visits of one run at once", "BROKEN", "run a|b at Step, visit 2 …"],
      ],
    );
    expect(await format(`${table}\n`, { parser: "markdown" })).toBe(`${table}\n`);
    expect(table).toContain("run a\\|b at Step");
  });
});
