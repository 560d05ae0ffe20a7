/**
 * `npm run bench:ssh`: what one command costs the console over SSH, against a lab node on
 * loopback (real SSH protocol, real bash in the node's namespace). Every visit of every step
 * sends several: their round trip is in every host's critical path.
 *
 * - A command over a kept connection (the worker's pool) — with the baseline in the same run:
 *   the same command on a fresh connection each time (handshake, key exchange, password).
 * - A 1 MiB upload (checksum-verified, atomic: how BuildVmTemplate sends its scripts).
 */
import { parseArgs } from "node:util";
import { startLab } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { percentile, report } from "./support/report";
import { runBench, startUntilEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:ssh -- [--commands N]
  --commands N   commands over the kept connection (default 300; a tenth of them on fresh ones)`;

async function timed(action: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await action();
  return performance.now() - started;
}

async function main() {
  const { values } = parseArgs({
    options: { commands: { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const commands = Number(values.commands ?? 300);
  if (!Number.isInteger(commands) || commands < 10)
    throw new Error(`--commands must be a whole number ≥ 10\n${USAGE}`);

  const node = await startUntilEnd("lab node", startLab({ name: "bench-ssh" }), (n) => n.stop());
  const session = await startUntilEnd("SSH session", labSession(node), (s) => s.close());

  const kept: number[] = [];
  // Warm-up: the first commands pay for bash's and the page cache's first start.
  for (let i = 0; i < 10; i++) await session.exec("true");
  for (let i = 0; i < commands; i++) kept.push(await timed(() => session.exec("true")));

  const fresh: number[] = [];
  for (let i = 0; i < Math.max(5, commands / 10); i++) {
    fresh.push(
      await timed(async () => {
        const once = await labSession(node);
        try {
          await once.exec("true");
        } finally {
          once.close();
        }
      }),
    );
  }

  const bytes = Buffer.alloc(1024 * 1024, 7);
  const uploads: number[] = [];
  for (let i = 0; i < 20; i++)
    uploads.push(await timed(() => session.upload(`/tmp/bench-ssh-${i % 2}`, bytes)));

  report("command over a kept connection, p50", percentile(kept, 50), "ms");
  report("command over a kept connection, p95", percentile(kept, 95), "ms");
  report("baseline: command on a fresh connection, p50", percentile(fresh, 50), "ms");
  report("baseline: command on a fresh connection, p95", percentile(fresh, 95), "ms");
  report(
    "a kept connection saves per command (p50)",
    percentile(fresh, 50) - percentile(kept, 50),
    "ms",
  );
  report("1 MiB upload over a kept connection, p50", percentile(uploads, 50), "ms");
}

runBench(main);
