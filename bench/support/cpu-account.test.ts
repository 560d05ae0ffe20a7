import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { openCpuAccount } from "./cpu-account";

// Only where cgroups can be made (root, as on the CI machine); elsewhere the bench says so.
const account = openCpuAccount("selftest");

describe.skipIf(account === null)("a CPU account (bench/support/cpu-account.ts)", () => {
  it("counts a detached process that left the tree of the shell that joined it", async () => {
    const before = account!.seconds();
    // The shell joins, starts a busy loop under setsid in the background and exits at once:
    // its own and its reaped children's counters never see the loop's CPU.
    execFileSync("/bin/sh", [
      "-c",
      `${account!.joinLine()}; setsid sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i + 1)); done' >/dev/null 2>&1 < /dev/null &`,
    ]);
    try {
      const deadline = Date.now() + 20_000;
      while (account!.seconds() - before < 0.1 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      expect(account!.seconds() - before).toBeGreaterThanOrEqual(0.1);
    } finally {
      account!.close();
    }
  }, 30_000);
});
