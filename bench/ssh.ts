/**
 * `npm run bench:ssh`: what one command costs the console over SSH, against a lab node on
 * loopback (real SSH protocol, real bash in the node's namespace). Every visit of every step
 * sends several: their round trip is in every host's critical path.
 *
 * - A command over a kept connection (the worker's pool) — with the baseline in the same run:
 *   the same command on a fresh connection each time (handshake, key exchange, password).
 * - A 1 MiB upload (checksum-verified, atomic: how BuildVmTemplate sends its scripts).
 * - A detached start (`nohup setsid … &`, how remote jobs and builds start): its round trip
 *   beside a plain command's — it returns while its job runs on.
 * - A command given up on (`timeoutMs` 300): when the call rejects, beside the 300 ms.
 * - The waiters' watch loop (lib/steps/remote-job/remote-watch.ts): a status file changed on the host
 *   at a random moment while the loop waits → the loop's `changed` at the console, beside its
 *   round (WATCH_ROUND_SECONDS) and a one-shot status read (what a poll costs); and a baseline
 *   that no longer holds when the loop starts → `changed` at once, beside a plain command.
 */
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { isProcessAlive, startLab } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { sh, type SshSession } from "@/lib/ssh";
import {
  printSignature,
  takeSignature,
  WATCH_ROUND_SECONDS,
  watchSawChange,
  watchStatusCommand,
  type WatchedStatus,
} from "@/lib/steps/remote-job/remote-watch";
import { percentile, report } from "./support/report";
import { runBench, startUntilEnd } from "./support/run-bench";

const USAGE = `Usage: npm run bench:ssh -- [--commands N]
  --commands N   commands over the kept connection (default 300; a tenth of them on fresh ones,
                 a fifteenth of them each of the detached starts, give-ups and watches)`;

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

  const rounds = Math.max(10, Math.round(commands / 15));
  const detached: number[] = [];
  for (let i = 0; i < rounds; i++) {
    let job = 0;
    detached.push(
      await timed(async () => {
        const started = await session.exec(
          "nohup setsid sleep 300 > /dev/null 2>&1 < /dev/null & echo $!",
        );
        job = Number(started.stdout.trim());
      }),
    );
    if (!(job > 1 && isProcessAlive(job)))
      throw new Error(`the detached job (PID ${job}) did not outlive its start command`);
    process.kill(job, "SIGKILL");
  }
  report("detached start (nohup setsid … &), p50", percentile(detached, 50), "ms");
  report("detached start (nohup setsid … &), p95", percentile(detached, 95), "ms");

  const givenUp: number[] = [];
  for (let i = 0; i < rounds; i++) {
    givenUp.push(
      await timed(() =>
        session.exec("sleep 30", { timeoutMs: 300 }).then(
          () => {
            throw new Error("a command given up on after 300 ms ended by itself");
          },
          () => undefined,
        ),
      ),
    );
  }
  report("baseline: the command's timeoutMs", 300, "ms");
  report("command given up on → call rejected, p50", percentile(givenUp, 50), "ms");
  report("command given up on → call rejected, p95", percentile(givenUp, 95), "ms");

  await measureWatch(session, node.root, rounds);
}

/** The waiters' watch loop against a status folder on the node (see the file's comment). */
async function measureWatch(session: SshSession, nodeRoot: string, rounds: number) {
  const nodeDir = "/var/lib/clupilot/bench-watch";
  const dir = path.join(nodeRoot, nodeDir);
  fs.mkdirSync(dir, { recursive: true });
  const watched: WatchedStatus = { dir: sh`${nodeDir}`, files: ["state", "phase"], pidFiles: [] };
  const write = (file: string, text: string) => fs.writeFileSync(path.join(dir, file), text);
  const signature = async () => {
    const { signature } = takeSignature((await session.exec(printSignature(watched))).stdout);
    if (signature === null) throw new Error("the status read printed no signature");
    return signature;
  };
  write("state", "running\n");

  const reads: number[] = [];
  for (let i = 0; i < rounds; i++) reads.push(await timed(() => signature()));

  const heard: number[] = [];
  for (let i = 0; i < rounds; i++) {
    write("phase", `phase ${i}\n`);
    const base = await signature();
    let changedAt: number | null = null;
    const result = await session.exec(watchStatusCommand(watched, base, 20), {
      timeoutMs: 30_000,
      onOutput: (stream, chunk) => {
        // Once the loop is in its rounds, at a random moment within one.
        if (stream !== "stdout" || changedAt !== null || !chunk.includes(0x2e)) return;
        changedAt = -1;
        setTimeout(
          () => {
            write("phase", `phase ${i} changed\n`);
            changedAt = performance.now();
          },
          Math.random() * WATCH_ROUND_SECONDS * 1000,
        );
      },
    });
    const ended = performance.now();
    if (!watchSawChange(result.stdout) || changedAt === null || changedAt < 0)
      throw new Error(`the watch loop did not see the change: ${result.stdout.slice(-200)}`);
    heard.push(ended - changedAt);
  }

  const stale: number[] = [];
  for (let i = 0; i < rounds; i++) {
    write("phase", `stale ${i}\n`);
    const base = await signature();
    write("phase", `stale ${i} changed\n`);
    stale.push(
      await timed(async () => {
        const result = await session.exec(watchStatusCommand(watched, base, 20));
        if (!watchSawChange(result.stdout))
          throw new Error("a watch on a baseline that no longer holds did not say `changed`");
      }),
    );
  }

  report("baseline: watch loop round (by design)", WATCH_ROUND_SECONDS * 1000, "ms");
  report("baseline: one status read (what a poll costs), p50", percentile(reads, 50), "ms");
  report("watch: change on the host → `changed` at the console, p50", percentile(heard, 50), "ms");
  report("watch: change on the host → `changed` at the console, p95", percentile(heard, 95), "ms");
  report("watch: change on the host → `changed` at the console, max", Math.max(...heard), "ms");
  report("watch: baseline stale at the start → `changed`, p50", percentile(stale, 50), "ms");
  report("watch: baseline stale at the start → `changed`, p95", percentile(stale, 95), "ms");
}

runBench(main);
