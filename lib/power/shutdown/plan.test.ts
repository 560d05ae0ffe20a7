import { describe, expect, it } from "vitest";
import { groupIndexes, orderTargets, shutdownBudgetSeconds } from "./plan";

const t = (name: string, stage: number, runsConsole = false) => ({ name, stage, runsConsole });

describe("the shutdown order", () => {
  it("goes by stage, then name, with the console's host last whatever its stage", () => {
    const ordered = orderTargets([
      t("zeta", 0),
      t("console", 0, true),
      t("alpha", 2),
      t("beta", 0),
    ]);
    expect(ordered.map((x) => x.name)).toEqual(["beta", "zeta", "alpha", "console"]);
  });

  it("groups each stage, and the console's host alone at the end", () => {
    const ordered = orderTargets([t("a", 0), t("b", 0), t("c", 1), t("console", 1, true)]);
    expect(groupIndexes(ordered)).toEqual([0, 0, 1, 2]);
  });

  it("budgets every group's call deadline plus the time to go down", () => {
    expect(shutdownBudgetSeconds(3, { callTimeoutSeconds: 10, targetDownSeconds: 180 })).toBe(210);
    expect(shutdownBudgetSeconds(0, { callTimeoutSeconds: 10, targetDownSeconds: 180 })).toBe(0);
  });
});
