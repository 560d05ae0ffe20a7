/**
 * A lab process in miniature, for lab/namespace/namespace.int.test.ts: starts a node namespace
 * on the root folder given as argv[2], starts a detached `sleep` inside it, prints
 * `{ "id": …, "sleeper": … }` and waits to be killed — or, when the namespace cannot be had,
 * prints the lab's message on stderr and exits 1, as `npm run lab` does.
 */
import { spawn } from "node:child_process";

import { waitUntil } from "../processes";
import { startNodeNamespace } from "./namespace";

const root = process.argv[2];
if (!root) throw new Error("usage: namespace.fixture.ts ROOT");

try {
  const ns = await startNodeNamespace(root);
  // detached: its own session, as `nohup setsid` gives a build driver.
  const sleep = ns.command(["sleep", "300"]);
  const child = spawn(sleep.file, sleep.args, { detached: true, stdio: "ignore" });
  child.unref();
  // nsenter opens the namespace through this process's descriptor: until it has entered, a kill
  // of this process would leave it nothing to enter (a rehearsal's killed fixture did that).
  await waitUntil(() => ns.processes().includes(child.pid!), {
    timeoutMs: 15_000,
    what: `the sleeper ${child.pid} to enter ${ns.id}`,
  });
  process.stdout.write(`${JSON.stringify({ id: ns.id, sleeper: child.pid })}\n`);
  setInterval(() => {}, 60_000);
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
