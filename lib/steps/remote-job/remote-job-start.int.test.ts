/**
 * A job's start prints the baseline of the first watch. A short job (apt-get update on a fast
 * mirror) may be over before that baseline is taken: the start then says so, and the visit
 * reads the result at once instead of watching for a change that already happened.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLab, type LabNode } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import type { SshSession } from "@/lib/ssh";
import { takeSignature } from "./remote-watch";
import { endedAtStart, killJobCommand, startJobCommand } from "./remote-job";

let node: LabNode;
let session: SshSession;

beforeAll(async () => {
  node = await startLab();
  session = await labSession(node, { pinnedHostKey: node.ssh.hostKeySha256 });
});
afterAll(async () => {
  session?.close();
  await node?.stop();
});

async function start(name: string, body: string) {
  const result = await session.exec(startJobCommand(name), { stdin: body, timeoutMs: 30_000 });
  expect(result.code).toBe(0);
  const { signature, rest } = takeSignature(result.stdout);
  expect(signature).toMatch(/^\d+ \d+$/);
  return rest;
}

describe("starting a remote job", () => {
  it("a job that ended before the baseline was taken says so", async () => {
    // The start looks for the pid file at once and then every 100 ms: by its second look
    // this job has written its pid and its result.
    const rest = await start("ends-at-once", "exit 0\n");
    expect(rest.split("\n")[0]).toMatch(/^\d+$/);
    expect(endedAtStart(rest)).toBe(true);
  });

  it("a job still running at the baseline does not", async () => {
    const rest = await start("runs-on", "sleep 30\n");
    expect(endedAtStart(rest)).toBe(false);
    const killed = await session.exec(killJobCommand("runs-on", 1), { timeoutMs: 30_000 });
    expect(killed.stdout).toMatch(/terminated|killed/);
  });
});
