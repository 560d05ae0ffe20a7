import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  NutGrammarError,
  nutErrorCode,
  parseVarLines,
  quoteNutWord,
  splitNutWords,
} from "./protocol";

describe("NUT protocol grammar", () => {
  it("splits a VAR line into its words, the quoted value with its spaces", () => {
    expect(splitNutWords('VAR su700 ups.status "OB LB"')).toEqual([
      "VAR",
      "su700",
      "ups.status",
      "OB LB",
    ]);
  });

  it('resolves \\" and \\\\ inside quotes, as upsd 2.8.0 sends them', () => {
    // Both lines verbatim from Debian's upsd 2.8.0 + dummy-ups for a .dev file holding
    // ups.mfr: "A \"q\" b" (dummy-ups copies the escaped text into device.mfr).
    expect(splitNutWords(String.raw`VAR labups ups.mfr "A \"q\" b"`)[3]).toBe('A "q" b');
    expect(splitNutWords(String.raw`VAR labups device.mfr "A \\\"q\\\" b"`)[3]).toBe(
      String.raw`A \"q\" b`,
    );
  });

  it("keeps an empty quoted value as an empty word", () => {
    expect(splitNutWords('VAR ups ups.alarm ""')).toEqual(["VAR", "ups", "ups.alarm", ""]);
  });

  it("refuses an unterminated quote and a trailing lone backslash", () => {
    expect(() => splitNutWords('VAR ups x "open')).toThrow(NutGrammarError);
    expect(() => splitNutWords("VAR ups x \\")).toThrow(NutGrammarError);
  });

  it("round-trips any value without a line break through quoting and splitting", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }).filter((value) => !/[\r\n\0]/.test(value)),
        (value) => {
          const line = `VAR ups some.var ${quoteNutWord(value)}`;
          expect(splitNutWords(line)).toEqual(["VAR", "ups", "some.var", value]);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("refuses to quote a line break, which would smuggle in a second command", () => {
    expect(() => quoteNutWord("secret\nFSD labups")).toThrow(NutGrammarError);
    expect(() => quoteNutWord("a\rb")).toThrow(NutGrammarError);
  });

  it("reads the code of an ERR answer and nothing from other lines", () => {
    expect(nutErrorCode(splitNutWords("ERR DATA-STALE"))).toBe("DATA-STALE");
    expect(nutErrorCode(splitNutWords("ERR ACCESS-DENIED extra words"))).toBe("ACCESS-DENIED");
    expect(nutErrorCode(splitNutWords("OK"))).toBeNull();
  });

  it("parses the lines of a LIST VAR answer into variables", () => {
    const vars = parseVarLines("labups", [
      'VAR labups battery.charge "100"',
      'VAR labups ups.status "OL CHRG"',
    ]);
    expect(Object.fromEntries(vars)).toEqual({ "battery.charge": "100", "ups.status": "OL CHRG" });
  });

  it("refuses a LIST VAR line for another UPS or of another shape", () => {
    expect(() => parseVarLines("labups", ['VAR other ups.status "OL"'])).toThrow(NutGrammarError);
    expect(() => parseVarLines("labups", ['RW labups ups.id "x"'])).toThrow(NutGrammarError);
    expect(() => parseVarLines("labups", ["VAR labups ups.status"])).toThrow(NutGrammarError);
  });
});
