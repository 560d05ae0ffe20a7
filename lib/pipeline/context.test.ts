import { describe, expect, it } from "vitest";
import { RunContext } from "./context";

describe("RunContext", () => {
  it("is dirty only after a real change", () => {
    const ctx = new RunContext({ a: 1 });
    expect(ctx.dirty).toBe(false);
    ctx.delete("missing");
    expect(ctx.dirty).toBe(false);
    ctx.set("b", { deadline: "2026-01-01T00:00:00Z" });
    expect(ctx.dirty).toBe(true);
    expect(ctx.toJSON()).toEqual({ a: 1, b: { deadline: "2026-01-01T00:00:00Z" } });
  });

  it("never shares objects with the caller", () => {
    const initial = { nested: { n: 1 } };
    const ctx = new RunContext(initial);
    ctx.get<{ n: number }>("nested")!.n = 2;
    const value = { n: 3 };
    ctx.set("other", value);
    value.n = 4;
    expect(initial.nested.n).toBe(1);
    expect(ctx.get("other")).toEqual({ n: 3 });
  });

  it("treats setting undefined as deleting", () => {
    const ctx = new RunContext({ a: 1 });
    ctx.set("a", undefined);
    expect(ctx.has("a")).toBe(false);
  });
});
