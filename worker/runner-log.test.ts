import { describe, expect, it } from "vitest";
import { withoutQueryParams } from "./runner";

describe("the worker's log of graphile-worker errors", () => {
  it("cuts a failed query's parameters, even ones spanning lines (a private key)", () => {
    const message =
      'Failed task run-tick (1) with error Failed query: insert into "credentials" values ($1)\n' +
      "params: -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n    at stack";
    const logged = withoutQueryParams(message);
    expect(logged).toContain('Failed query: insert into "credentials"');
    expect(logged).not.toContain("b3BlbnNzaC1rZXktdjEAAAAA");
    expect(logged).not.toContain("PRIVATE KEY");
    expect(withoutQueryParams("plain warning")).toBe("plain warning");
  });
});
