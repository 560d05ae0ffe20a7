/**
 * `npm run bench:fleet`: the fleet view at 1000 and 10 000 hosts, against its own embedded
 * Postgres and the production web server (`scripts/web-server.ts`, built first if there is no build).
 *
 * 1. Server response time (sequential requests, signed in): the hosts page (HTML with the first
 *    page server-rendered) and `GET /api/hosts` (first page, a search, a state filter), p50/p95.
 *    Baseline in the same run: the list it replaces — every host with its latest run, unpaged
 *    (listHosts over the whole fleet + JSON), timed in-process, and its payload size; beside it
 *    the fleet query of the first page alone, in-process too.
 * 2. Browser render time in Chromium: navigation start → the first page's rows in the document,
 *    and a keystroke in the search box → the narrowed rows.
 * 3. Live fan-out with 1000 hosts all onboarding, each changing phase every few seconds (run row
 *    update + NOTIFY in one transaction, as the engine commits a tick): commit → row patched in
 *    the browser (p50/p95, rows on screen), requests per second the page caused, and the web
 *    server's CPU.
 *
 * Prints `label: value unit` lines and ends by itself; whatever way it ends, it stops the
 * server, the browser and Postgres it started (support/run-bench.ts).
 */
import fs from "node:fs";
import { sql } from "drizzle-orm";
import type { BrowserContext, Page } from "playwright-core";
import { createApiToken } from "@/lib/auth/api-tokens";
import { createSession } from "@/lib/auth/session";
import { SESSION_COOKIE } from "@/lib/auth/session-cookie";
import { createUser } from "@/lib/auth/users";
import type { Database } from "@/lib/db/client";
import { queryFleet } from "@/lib/hosts/fleet-query";
import { ZFleetQuery } from "@/lib/hosts/fleet-schemas";
import { listHosts } from "@/lib/hosts/list-hosts";
import { notifyLive } from "@/lib/live/notify";
import { seedFleet } from "@/test/fleet-seed";
import { rowsPaintedAt } from "@/test/paint-timing";
import { launchChromium } from "./support/chromium";
import { openBenchDb } from "./support/postgres";
import { startProductionConsole } from "./support/production-console";
import { percentile, report } from "./support/report";
import { runBench } from "./support/run-bench";

const REQUESTS = Number(process.env.BENCH_FLEET_REQUESTS ?? 30);
const OPENS = Number(process.env.BENCH_FLEET_OPENS ?? 5);
/** Every host changes phase once per this many seconds during the fan-out. */
const PHASE_PERIOD_S = Number(process.env.BENCH_FLEET_PHASE_PERIOD_S ?? 5);
const FANOUT_SECONDS = Number(process.env.BENCH_FLEET_FANOUT_SECONDS ?? 30);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** CPU seconds (user + system) of every process in a process group, from /proc. */
function groupCpuSeconds(pgid: number): number {
  const tick = 100; // USER_HZ on Linux
  let total = 0;
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // After the command: state(0) ppid(1) pgrp(2) … utime(11) stime(12)
      if (Number(fields[2]) !== pgid) continue;
      total += (Number(fields[11]) + Number(fields[12])) / tick;
    } catch {
      // the process ended while we looked
    }
  }
  return total;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

async function main() {
  const server = await startProductionConsole("fleet");
  const { url, base } = server;
  const { db } = openBenchDb(url, 4);
  const user = await createUser(db, {
    name: "bench-viewer",
    role: "viewer",
    password: "bench viewer password, long enough",
  });
  const { token: sessionToken } = await createSession(db, user.id);
  const { token: apiToken } = await createApiToken(db, user.id, "bench:fleet");

  const browser = await launchChromium();
  const context = await browser.newContext();
  await context.addCookies([
    { name: SESSION_COOKIE, value: sessionToken, url: base, httpOnly: true, sameSite: "Lax" },
  ]);
  const api = (query = "") =>
    fetch(`${base}/api/hosts${query}`, { headers: { authorization: `Bearer ${apiToken}` } });
  const html = () =>
    fetch(`${base}/hosts`, { headers: { cookie: `${SESSION_COOKIE}=${sessionToken}` } });

  await server.waitUntilAnswering(
    () =>
      api().then(
        (r) => r.status === 200,
        () => false,
      ),
    30,
  );

  await seedFleet(url, { hosts: 1000, runsPerHost: 5, prefix: "a" });
  await measureFleet(db, context, base, "1000 hosts", api, html);
  await measureFanOut(db, context, base, server.serverPid);
  // Grow the fleet to 10 000 (the first 1000 stay onboarding from the fan-out).
  await seedFleet(url, { hosts: 9000, runsPerHost: 5, prefix: "b" });
  await measureFleet(db, context, base, "10 000 hosts", api, html);
}

async function measureFleet(
  db: Database,
  context: BrowserContext,
  base: string,
  label: string,
  api: (query?: string) => Promise<Response>,
  html: () => Promise<Response>,
) {
  // Server response times (warm: one of each first, as a running console is).
  await (await html()).text();
  await (await api()).text();
  const sample = async (request: () => Promise<Response>) => {
    const times: number[] = [];
    for (let i = 0; i < REQUESTS; i++) {
      times.push(
        await timed(async () => {
          const response = await request();
          if (!response.ok) throw new Error(`${response.url} answered ${response.status}`);
          await response.arrayBuffer();
        }),
      );
    }
    return times;
  };
  const page = await sample(html);
  report(`${label}: hosts page (HTML, first page) p50`, percentile(page, 50), "ms");
  report(`${label}: hosts page (HTML, first page) p95`, percentile(page, 95), "ms");
  const first = await sample(() => api());
  report(`${label}: GET /api/hosts first page p50`, percentile(first, 50), "ms");
  report(`${label}: GET /api/hosts first page p95`, percentile(first, 95), "ms");
  const search = await sample(() => api("?q=0099"));
  report(`${label}: GET /api/hosts?q=0099 p50`, percentile(search, 50), "ms");
  const failed = await sample(() => api("?state=failed&sort=updated"));
  report(`${label}: GET /api/hosts?state=failed&sort=updated p50`, percentile(failed, 50), "ms");
  const pageBytes = (await (await api()).arrayBuffer()).byteLength;
  report(`${label}: GET /api/hosts first page size`, pageBytes / 1024, "KiB");

  // Baseline: the unpaged list the hosts page and GET /api/hosts used to send.
  const old: number[] = [];
  let oldBytes = 0;
  for (let i = 0; i < Math.min(REQUESTS, 10); i++) {
    old.push(await timed(async () => (oldBytes = JSON.stringify(await listHosts(db)).length)));
  }
  report(`${label}: baseline unpaged list (every host, in-process) p50`, percentile(old, 50), "ms");
  report(`${label}: baseline unpaged list size`, oldBytes / 1024, "KiB");
  // The page's own queries, in-process like the baseline: facets and ids, then the page's rows.
  const byState = ZFleetQuery.parse({ sort: "state" });
  const paged: number[] = [];
  for (let i = 0; i < Math.min(REQUESTS, 10); i++)
    paged.push(await timed(() => queryFleet(db, byState)));
  report(
    `${label}: fleet query, first page sort=state (in-process) p50`,
    percentile(paged, 50),
    "ms",
  );

  // Browser: navigation start → the first page's rows painted (Element Timing).
  const opens: number[] = [];
  const inDom: number[] = [];
  const tab = await context.newPage();
  for (let i = 0; i < OPENS; i++) {
    await tab.goto(`${base}/hosts`, { waitUntil: "commit" });
    await tab.waitForFunction(
      () => document.querySelectorAll("[data-testid='hosts-table'] tbody tr").length >= 50,
      undefined,
      { polling: "raf" },
    );
    inDom.push(await tab.evaluate(() => performance.now()));
    opens.push(await rowsPaintedAt(tab));
  }
  report(`${label}: browser navigation → rows painted median`, percentile(opens, 50), "ms");
  report(`${label}: browser navigation → rows painted worst`, Math.max(...opens), "ms");
  report(
    `${label}: browser navigation → rows found by a page script (main thread free) median`,
    percentile(inDom, 50),
    "ms",
  );

  // Browser: a keystroke that narrows the list → the narrowed rows (debounce included).
  const narrow: number[] = [];
  for (let i = 0; i < OPENS; i++) {
    await tab.goto(`${base}/hosts`);
    const search = tab.getByTestId("fleet-search");
    await search.fill("a-0009");
    await tab.waitForFunction(
      () => document.querySelectorAll("[data-testid='hosts-table'] tbody tr").length === 10,
    );
    narrow.push(
      await tab.evaluate(async () => {
        const input = document.querySelector<HTMLInputElement>("[data-testid='fleet-search']")!;
        const start = performance.now();
        input.focus();
        document.execCommand("insertText", false, "9");
        // (No named functions in here: the bundler would wrap them in a helper the page lacks.)
        while (document.querySelectorAll("[data-testid='hosts-table'] tbody tr").length !== 1)
          await new Promise((resolve) => requestAnimationFrame(resolve));
        return performance.now() - start;
      }),
    );
  }
  report(
    `${label}: browser keystroke → narrowed rows median (150 ms debounce included)`,
    percentile(narrow, 50),
    "ms",
  );
  await tab.close();
}

async function measureFanOut(
  db: Database,
  context: BrowserContext,
  base: string,
  serverPid: number,
) {
  // Every host is onboarding (a fleet-wide re-onboarding): each one's run is running.
  const { rows: latest } = await db.execute<{ run_id: string; host_id: string; name: string }>(sql`
    update runs set status = 'running', finished_at = null, failure_reason = null,
                    failed_step = null, next_tick_at = now() + interval '1 minute'
    where id in (select distinct on (host_id) id from runs order by host_id, created_at desc)
    returning id as run_id, host_id, (select name from hosts where id = host_id) as name`);
  const page = await context.newPage();
  let requests = 0;
  page.on("request", (request) => {
    if (request.url().includes("/api/hosts")) requests += 1;
  });
  await page.goto(`${base}/hosts`);
  await page.getByTestId("live-indicator").and(page.locator("[data-status='live']")).waitFor();
  await installPhaseWatcher(page);

  const committedAt = new Map<number, number>();
  const rate = latest.length / PHASE_PERIOD_S;
  const total = Math.round(rate * FANOUT_SECONDS);
  const cpuBefore = groupCpuSeconds(serverPid);
  const requestsBefore = requests;
  const started = performance.now();
  let seq = 0;
  // Four writers, paced to `rate` changes per second overall, host after host.
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (;;) {
        const mine = seq++;
        if (mine >= total) return;
        const due = started + (mine / rate) * 1000;
        const wait = due - performance.now();
        if (wait > 0) await sleep(wait);
        const run = latest[mine % latest.length]!;
        await db.transaction(async (tx) => {
          await tx.execute(sql`
            update runs set phase = ${`bench ${mine}`}, updated_at = now() where id = ${run.run_id}`);
          await notifyLive(tx, { type: "run", runId: run.run_id, hostId: run.host_id });
        });
        committedAt.set(mine, Date.now());
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await sleep(1500); // the last messages and any coalesced re-read
  const cpu = groupCpuSeconds(serverPid) - cpuBefore;
  const shown = await page.evaluate(
    () => (window as unknown as { __phaseShown: [number, number][] }).__phaseShown,
  );
  const latencies = shown
    .filter(([mine]) => committedAt.has(mine))
    .map(([mine, at]) => at - committedAt.get(mine)!);
  report("fan-out: hosts changing phase", latest.length, "hosts");
  report("fan-out: phase changes committed", committedAt.size, "changes");
  report("fan-out: commit rate achieved", committedAt.size / elapsed, "changes/s");
  report("fan-out: changes of rows on screen seen in the browser", latencies.length, "changes");
  report("fan-out: commit → row patched p50", percentile(latencies, 50), "ms");
  report("fan-out: commit → row patched p95", percentile(latencies, 95), "ms");
  report(
    "fan-out: requests to /api/hosts caused by the page",
    (requests - requestsBefore) / (elapsed + 1.5),
    "req/s",
  );
  report("fan-out: web server CPU", (cpu / (elapsed + 1.5)) * 100, "% of one core");
  await page.close();
}

/** Records, in the page, when each `bench <n>` phase appears on a row (wall clock). */
async function installPhaseWatcher(page: Page) {
  await page.evaluate(() => {
    const shown: [number, number][] = [];
    const seen = new Set<number>();
    (window as unknown as { __phaseShown: [number, number][] }).__phaseShown = shown;
    const body = document.querySelector("[data-testid='hosts-table'] tbody")!;
    new MutationObserver((mutations) => {
      const at = Date.now();
      for (const mutation of mutations) {
        const node =
          mutation.target instanceof Element ? mutation.target : mutation.target.parentElement;
        const text = node?.closest(".phase-line")?.textContent ?? "";
        const match = /bench (\d+)/.exec(text);
        if (!match || seen.has(Number(match[1]))) continue;
        seen.add(Number(match[1]));
        shown.push([Number(match[1]), at]);
      }
    }).observe(body, { subtree: true, childList: true, characterData: true });
  });
}

runBench(main);
