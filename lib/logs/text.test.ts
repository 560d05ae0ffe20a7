import { describe, expect, it } from "vitest";
import {
  capLineLength,
  commandHeader,
  commandResult,
  foldCarriageReturns,
  maskSecrets,
  MAX_LINE_CHARS,
  normalizeLine,
  stripAnsi,
} from "./text";

describe("\\r folding: a progress line keeps its last state", () => {
  it("keeps the last redraw", () => {
    expect(foldCarriageReturns("10%\r50%\r100%")).toBe("100%");
  });
  it("drops a trailing \\r (CRLF and 'redraw then newline' keep the line)", () => {
    expect(foldCarriageReturns("done\r")).toBe("done");
    expect(foldCarriageReturns("50%\r\r")).toBe("50%");
  });
  it("keeps colours set before the first redraw", () => {
    expect(foldCarriageReturns("\u001b[32m10%\r50%")).toBe("\u001b[32m50%");
  });
  it("leaves lines without \\r alone", () => {
    expect(foldCarriageReturns("plain")).toBe("plain");
    expect(foldCarriageReturns("")).toBe("");
  });
  it("is idempotent", () => {
    const once = foldCarriageReturns("\u001b[1ma\rb\rc\r");
    expect(foldCarriageReturns(once)).toBe(once);
  });
});

describe("secrets are masked before a line is stored", () => {
  it.each([
    ["pveum passwd root@pam --password=s3cr3t!", "s3cr3t!"],
    ["curl -H 'Authorization: PVEAPIToken=clupilot@pve!console=1f2e3d4c-aaaa-bbbb'", "1f2e3d4c"],
    ["pvesh create --password hunter22 /access/users", "hunter22"],
    ['{"api_token": "abcdef123456"}', "abcdef123456"],
    ["TOKEN_SECRET=abcdef123456 ./run", "abcdef123456"],
    ["wget https://user:pa55word@images.example/x.img", "pa55word"],
    ["-----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjEAAAA", "b3BlbnNza"],
  ])("%s", (line, secret) => {
    const masked = maskSecrets(line);
    expect(masked).not.toContain(secret);
    expect(masked).toContain("***");
  });
  it("masks literal secrets the console knows, wherever they appear", () => {
    expect(maskSecrets("echo Xy9-pass-Q | tee /tmp/x", ["Xy9-pass-Q"])).toBe(
      "echo *** | tee /tmp/x",
    );
  });
  it("leaves ordinary lines alone", () => {
    const line = "pveum user token list root@pam; apt-get install -y proxmox-ve";
    expect(maskSecrets(line)).toBe(line);
  });
});

describe("line normalization", () => {
  it("cuts an over-long line and says how much", () => {
    const line = "x".repeat(MAX_LINE_CHARS + 10);
    expect(capLineLength(line)).toMatch(/…\[line cut: 10 more characters\]$/);
  });
  it("never leaves a newline in a line", () => {
    expect(normalizeLine("a\nb")).toBe("a b");
  });
  it("strips colours and control sequences for search", () => {
    expect(stripAnsi("\u001b[1;31mred\u001b[0m \u001b]0;title\u0007x")).toBe("red x");
  });
  it("writes command headers and results with step, time, exit code and duration", () => {
    expect(commandHeader("ConnectHost", "uname -a", new Date("2026-01-02T03:04:05.678Z"))).toBe(
      "▶ ConnectHost 03:04:05.678Z $ uname -a",
    );
    expect(commandResult(0, null, 12)).toBe("◀ exit 0 in 12 ms");
    expect(commandResult(null, "SIGKILL", 1500)).toBe("◀ killed by SIGKILL in 1.5 s");
  });
});
