/**
 * `npm run bench:log`: the build-log viewer in Chromium against the production web server
 * (`scripts/web-server.ts`, built first if there is no build) and an embedded Postgres.
 *
 * 1. Open a stored 100 000-line log on the host page: navigation → last line on screen, then
 *    scroll through it (frame intervals). Baseline in the same run: the old non-virtualized list
 *    (one <li> per line, built as plain DOM — a lower bound for the React list it replaces).
 * 2. Host write → browser latency: a lab host over real SSH prints lines stamped with its clock
 *    (`$EPOCHREALTIME`); they travel the path command output takes in a tick (ssh2 exec
 *    onOutput → line splitter → the run-log writer → Postgres → NOTIFY → SSE → viewer), and the
 *    page records when each stamped line appears in the DOM. At 10 lines/s every line is
 *    measured; at 10 000 lines/s only the lines that reach the screen in follow mode are.
 * 3. Sustained throughput: the host prints as fast as it can; bytes stored per second and when
 *    the browser had the last line.
 */
import crypto from "node:crypto";
import { StringDecoder } from "node:string_decoder";
import type { Page } from "playwright-core";
import { startLab } from "@/lab";
import { labSession } from "@/lab/test-helpers";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { createTestUser } from "@/test/auth";
import type { Database } from "@/lib/db/client";
import { credentials, hosts, runs } from "@/lib/db/schema";
import { appendRunLog } from "@/lib/logs/append";
import type { LogEntry } from "@/lib/logs/chunks";
import { LineSplitter } from "@/lib/logs/line-splitter";
import { readLogHead } from "@/lib/logs/read";
import { createRunLogWriter } from "@/lib/logs/writer";
import { launchChromium } from "./support/chromium";
import { openBenchDb } from "./support/postgres";
import { startProductionConsole } from "./support/production-console";
import { percentile, report } from "./support/report";
import { runBench, startUntilEnd } from "./support/run-bench";

const LINES = Number(process.env.BENCH_LOG_LINES ?? 100_000);
const OPEN_REPEATS = 3;

const median = (values: number[]) => percentile(values, 50);

async function seedHost(db: Database, name: string): Promise<{ hostId: string; runId: string }> {
  const [credential] = await db
    .insert(credentials)
    .values({ kind: "password", sealed: "bench" })
    .returning({ id: credentials.id });
  const [host] = await db
    .insert(hosts)
    .values({ name, address: "192.0.2.1", sshUser: "root", credentialId: credential!.id })
    .returning({ id: hosts.id });
  const [run] = await db
    .insert(runs)
    .values({ hostId: host!.id, pipeline: "onboard-host", currentStep: "BuildVmTemplate" })
    .returning({ id: runs.id });
  return { hostId: host!.id, runId: run!.id };
}

/** apt- and virt-customize-like lines, some coloured, five steps. */
function storedLine(i: number): string {
  if (i % 10 === 0)
    return `\u001b[32m[${i}]\u001b[0m Setting up libguestfs-tools (1:1.54.1-1) ... \u001b[1mdone\u001b[0m`;
  return `Get:${i} http://deb.debian.org/debian trixie/main amd64 libfoo${i % 97} amd64 1.2.${i % 13}-4 [${i % 900} kB]`;
}

async function seedLargeLog(db: Database, runId: string) {
  const steps = [
    "InstallProxmoxKernel",
    "InstallProxmoxVe",
    "ConfigureProxmox",
    "CreateApiToken",
    "BuildVmTemplate",
  ];
  const at = new Date();
  for (let from = 1; from <= LINES; from += 10_000) {
    const batch: LogEntry[] = [];
    for (let i = from; i < Math.min(from + 10_000, LINES + 1); i++) {
      const step = steps[Math.floor(((i - 1) * steps.length) / LINES)]!;
      batch.push({ step, kind: "output", text: storedLine(i), at });
    }
    await appendRunLog(db, runId, batch);
  }
}

/** Scrolls `selector` through its whole height in `frames` animation frames; frame intervals. */
async function scrollFrames(page: Page, selector: string, frames = 240): Promise<number[]> {
  return page.evaluate(
    async ({ selector, frames }) => {
      const box = document.querySelector(selector) as HTMLElement;
      box.scrollTop = 0;
      const step = (box.scrollHeight - box.clientHeight) / frames;
      const intervals: number[] = [];
      let last = performance.now();
      for (let i = 1; i <= frames; i++) {
        box.scrollTop = step * i;
        await new Promise((resolve) => requestAnimationFrame(resolve));
        const now = performance.now();
        intervals.push(now - last);
        last = now;
      }
      return intervals;
    },
    { selector, frames },
  );
}

async function main() {
  const server = await startProductionConsole("log");
  const { base } = server;
  const { db } = openBenchDb(server.url, 6);
  // Every page and API route needs a signed-in user: the browser carries a viewer's session.
  const reader = await createTestUser(db, "viewer");
  const lab = await startUntilEnd("lab node", startLab(), (node) => node.stop());
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  await context.addCookies([{ name: SESSION_COOKIE, value: reader.sessionToken, url: base }]);
  await server.waitUntilAnswering(
    () =>
      fetch(`${base}/api/hosts`, { headers: reader.authHeaders() }).then(
        (r) => r.ok,
        () => false,
      ),
    30,
  );

  // 1. Open a stored 100 000-line log.
  const large = await seedHost(db, "bench-large");
  const seedStart = performance.now();
  await seedLargeLog(db, large.runId);
  const head = await readLogHead(db, large.runId);
  report(`stored ${LINES}-line log`, head.bytes / 1024 / 1024, "MiB");
  report(`append ${LINES} lines through appendRunLog`, performance.now() - seedStart, "ms");

  const page = await context.newPage();
  // Warm the server's route compilation caches once.
  await page.goto(`${base}/hosts/${large.hostId}`);
  await page.waitForSelector(`.log-row[data-line="${LINES}"]`, { timeout: 60_000 });
  const opens: number[] = [];
  for (let i = 0; i < OPEN_REPEATS; i++) {
    await page.goto("about:blank");
    await page.goto(`${base}/hosts/${large.hostId}`, { waitUntil: "commit" });
    await page.waitForFunction(
      (lines) => document.querySelector(`.log-row[data-line="${lines}"]`) !== null,
      LINES,
      { polling: "raf", timeout: 60_000 },
    );
    opens.push(await page.evaluate(() => performance.now()));
  }
  report(
    `open ${LINES}-line log in the viewer (navigation → last line on screen), median of ${OPEN_REPEATS}`,
    median(opens),
    "ms",
  );
  report(
    `open ${LINES}-line log in the viewer, worst of ${OPEN_REPEATS}`,
    Math.max(...opens),
    "ms",
  );
  const frames = await scrollFrames(page, '[data-testid="log-scroll"]');
  report("viewer scroll through the whole log: frame interval p50", percentile(frames, 50), "ms");
  report("viewer scroll through the whole log: frame interval p95", percentile(frames, 95), "ms");
  const search = await page.evaluate(async () => {
    const input = document.querySelector('[data-testid="log-search"]') as HTMLInputElement;
    const start = performance.now();
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")!.set!;
    setter.call(input, "libfoo42 ");
    input.dispatchEvent(new Event("input", { bubbles: true }));
    const count = document.querySelector('[data-testid="log-search-count"]')!;
    while (!/of/.test(count.textContent ?? "")) await new Promise((r) => requestAnimationFrame(r));
    return performance.now() - start;
  });
  report(`search ${LINES} lines (type → match count shown)`, search, "ms");

  // Baseline: the old list, one <li> per line (time, step, text), non-virtualized.
  await page.goto(`${base}/hosts/new`);
  const baseline: { open: number; frames: number[] } = await page.evaluate(
    async ({ runId }) => {
      const start = performance.now();
      const text = await (await fetch(`/api/runs/${runId}/log`)).text();
      const box = document.createElement("div");
      box.className = "log";
      box.style.cssText = "height:36rem;max-height:none;overflow:auto";
      const list = document.createElement("ol");
      const lines = text.split("\n");
      lines.pop();
      for (const line of lines) {
        const li = document.createElement("li");
        const time = document.createElement("time");
        time.textContent = "12:00:00";
        const step = document.createElement("span");
        step.className = "log-step";
        step.textContent = "BuildVmTemplate";
        const body = document.createElement("span");
        body.className = "log-line";
        body.textContent = line;
        li.append(time, " ", step, " ", body);
        list.append(li);
      }
      box.append(list);
      document.body.append(box);
      box.scrollTop = box.scrollHeight;
      void box.offsetHeight;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const open = performance.now() - start;
      box.id = "baseline-log";
      return { open, frames: [] };
    },
    { runId: large.runId },
  );
  baseline.frames = await scrollFrames(page, "#baseline-log");
  report(
    `baseline: non-virtualized list (plain DOM, ${LINES} <li>), fetch → laid out and painted`,
    baseline.open,
    "ms",
  );
  report(
    "baseline: non-virtualized list scroll: frame interval p95",
    percentile(baseline.frames, 95),
    "ms",
  );
  await page.close();

  // 2 + 3. Host write → browser, through the path command output takes.
  const session = await labSession(lab);
  const live = async (label: string, script: string, expectLines: number) => {
    const target = await seedHost(db, `bench-${crypto.randomBytes(3).toString("hex")}`);
    const viewer = await context.newPage();
    await viewer.goto(`${base}/hosts/${target.hostId}`);
    await viewer.waitForSelector('[data-stream-state="live"]');
    await viewer.evaluate(() => {
      const w = window as unknown as { __seen: Map<number, number>; __last: number };
      w.__seen = new Map();
      w.__last = 0;
      new MutationObserver((records) => {
        const now = Date.now() / 1000;
        for (const record of records) {
          for (const node of record.addedNodes) {
            for (const match of (node.textContent ?? "").matchAll(/BENCH (\d+) (\d+\.\d+)/g)) {
              const seq = Number(match[1]);
              if (!w.__seen.has(seq)) w.__seen.set(seq, (now - Number(match[2])) * 1000);
              w.__last = Math.max(w.__last, seq);
            }
          }
        }
      }).observe(document.querySelector('[data-testid="log-viewer"]')!, {
        childList: true,
        subtree: true,
      });
    });
    const writer = createRunLogWriter(db, target.runId);
    const splitter = new LineSplitter();
    const decoder = new StringDecoder("utf8");
    const started = performance.now();
    const result = await session.exec(`bash -c '${script}'`, {
      timeoutMs: 300_000,
      maxOutputBytes: 1024,
      onOutput: (stream, chunk) => {
        if (stream !== "stdout") return;
        for (const line of splitter.push(decoder.write(chunk)))
          writer.line("BuildVmTemplate", "output", line);
      },
    });
    await writer.close();
    const hostDone = performance.now() - started;
    if (result.code !== 0) throw new Error(`bench script failed: ${result.stderr}`);
    await viewer.waitForFunction(
      (n) => (window as unknown as { __last: number }).__last >= n,
      expectLines,
      { timeout: 120_000, polling: 50 },
    );
    const browserDone = performance.now() - started;
    const latencies = await viewer.evaluate(() => [
      ...(window as unknown as { __seen: Map<number, number> }).__seen.values(),
    ]);
    const stored = await readLogHead(db, target.runId);
    await viewer.close();
    return { latencies, hostDone, browserDone, bytes: stored.bytes, lines: stored.lines, label };
  };

  const slow = await live(
    "10 lines/s",
    `for ((i=1; i<=100; i++)); do printf "BENCH %d %s\\n" $i $EPOCHREALTIME; sleep 0.1; done`,
    100,
  );
  report("host write → browser at 10 lines/s: lines measured", slow.latencies.length, "lines");
  report("host write → browser at 10 lines/s: p50", percentile(slow.latencies, 50), "ms");
  report("host write → browser at 10 lines/s: p95", percentile(slow.latencies, 95), "ms");

  const fast = await live(
    "10 000 lines/s",
    `for ((s=0; s<50; s++)); do for ((j=1; j<=1000; j++)); do printf "BENCH %d %s apt chatter padding to a typical line length\\n" $((s*1000+j)) $EPOCHREALTIME; done; sleep 0.1; done`,
    50_000,
  );
  report(
    "host write → browser at 10 000 lines/s: lines measured (those drawn on screen)",
    fast.latencies.length,
    "lines",
  );
  report("host write → browser at 10 000 lines/s: p50", percentile(fast.latencies, 50), "ms");
  report("host write → browser at 10 000 lines/s: p95", percentile(fast.latencies, 95), "ms");
  report("10 000 lines/s run: lines stored", fast.lines, "lines");
  report(
    "10 000 lines/s run: the host's own rate (bash printf + sleep)",
    (fast.lines / fast.hostDone) * 1000,
    "lines/s",
  );
  report(
    "10 000 lines/s run: sustained rate (host start → last line in browser)",
    (fast.lines / fast.browserDone) * 1000,
    "lines/s",
  );

  const blast = await live(
    "unpaced",
    `for ((i=1; i<=150000; i++)); do printf "BENCH %d %s apt chatter padding to a typical line length\\n" $i $EPOCHREALTIME; done`,
    150_000,
  );
  report("unpaced: host printed 150 000 lines in", blast.hostDone, "ms");
  report(
    "unpaced: sustained bytes stored and shown per second",
    blast.bytes / 1024 / 1024 / (blast.browserDone / 1000),
    "MiB/s",
  );
  report(
    "unpaced: sustained lines per second (host start → last line in browser)",
    (blast.lines / blast.browserDone) * 1000,
    "lines/s",
  );
  session.close();
}

runBench(main);
