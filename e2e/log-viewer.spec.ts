import fs from "node:fs";
import { expect, test, type Page } from "./support/test";
import { startLab, type LabNode } from "../lab";
import { createDb, type Database } from "../lib/db/client";
import { credentials, hosts, runs } from "../lib/db/schema";
import { appendRunLog } from "../lib/logs/append";
import type { LogEntry } from "../lib/logs/chunks";
import { scheduleTick } from "../lib/pipeline/schedule";
import { seal } from "../lib/secrets/seal";
import { base, databaseUrl, expectNoReload, markNoReload } from "./support/console";

/**
 * The build-log viewer on the host page, in Chromium, against the console started as `npm start`
 * starts it. A host whose run we drive ourselves (its next tick is a day away, so it stays
 * `running` until the operator aborts it) gets its log through THE append function the engine
 * uses; one real onboarding against a lab host covers the engine's own lines.
 */

let handle: ReturnType<typeof createDb> | null = null;
const db = (): Database => {
  handle ??= createDb(databaseUrl(), 2);
  return handle.db;
};
const labs: LabNode[] = [];
test.afterAll(async () => {
  await Promise.all(labs.map((lab) => lab.stop()));
  await handle?.pool.end();
});

const XSS_SCRIPT = `<script>window.__xss = 1</script> from a hostile package`;
const XSS_IMG = `<img src=x onerror="window.__xss = 2"> in a file name`;

/** A host with a running onboarding run that only the test (and an operator's Abort) moves. */
async function seedRunningHost(name: string): Promise<{ hostId: string; runId: string }> {
  const [credential] = await db()
    .insert(credentials)
    .values({ kind: "password", sealed: seal(JSON.stringify({ password: "never-used" })) })
    .returning({ id: credentials.id });
  const [host] = await db()
    .insert(hosts)
    .values({
      name,
      address: "192.0.2.10",
      sshPort: 22,
      sshUser: "root",
      credentialId: credential!.id,
    })
    .returning({ id: hosts.id });
  const [run] = await db()
    .insert(runs)
    .values({ hostId: host!.id, pipeline: "onboard-host", currentStep: "ConnectHost" })
    .returning({ id: runs.id });
  // Its next tick is a day away (the worker's recovery sweep would otherwise give it one now);
  // Abort moves it to now.
  await scheduleTick(db(), run!.id, new Date(Date.now() + 86_400_000));
  return { hostId: host!.id, runId: run!.id };
}

function entries(step: string, texts: string[], kind: LogEntry["kind"] = "output"): LogEntry[] {
  return texts.map((text) => ({ step, kind, text, at: new Date() }));
}

const numbered = (prefix: string, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => `${prefix} ${from + i}`);

const viewer = (page: Page) => page.getByTestId("log-viewer");
const row = (page: Page, n: number) => page.locator(`.log-row[data-line="${n}"]`);

test("the build log streams live: follow, scroll-up pause, jump to latest, search, permalink, download, XSS as text, masked secrets, Abort ends the stream", async ({
  page,
  context,
}) => {
  const { hostId, runId } = await seedRunningHost(`pve-log-live-${Date.now().toString(36)}`);
  await appendRunLog(db(), runId, [
    ...entries(
      "ConnectHost",
      ["▶ ConnectHost 10:00:00.000Z $ pveum passwd root@pam --password hunter22"],
      "command",
    ),
    ...entries("ConnectHost", [
      "\u001b[32mcoloured ok\u001b[0m and plain",
      "download 10%\rdownload 55%\rdownload 100%",
      XSS_SCRIPT,
      XSS_IMG,
      ...numbered("apt line", 6, 149),
      "the needle-4242 is here",
      ...numbered("apt line", 151, 300),
    ]),
    ...entries("ConnectHost", ["◀ exit 0 in 1.2 s"], "result"),
  ]);

  await page.goto(`${base()}/hosts/${hostId}`);
  await markNoReload(page);
  await expect(viewer(page)).toHaveAttribute("data-line-count", "301");
  await expect(page.getByTestId("log-stream-state")).toHaveText("Live");
  await expect(page.getByTestId("log-phase-line")).toContainText("ConnectHost");
  // Follow mode: the newest line is on screen.
  await expect(row(page, 301)).toBeVisible();
  await expect(viewer(page)).toHaveAttribute("data-follow", "true");

  // New lines appear without reload, and the view follows them.
  await appendRunLog(db(), runId, entries("ConnectHost", numbered("live line", 302, 310)));
  await expect(row(page, 310)).toContainText("live line 310");
  await expect(row(page, 310)).toBeVisible();
  await expectNoReload(page);

  // Scrolling up pauses follow; new lines do not move the view; "jump to latest" brings it back.
  const scroller = page.getByTestId("log-scroll");
  await scroller.hover();
  await page.mouse.wheel(0, -100_000);
  await expect(viewer(page)).toHaveAttribute("data-follow", "false");
  await expect(row(page, 1)).toBeVisible();
  await appendRunLog(db(), runId, entries("ConnectHost", numbered("while reading", 311, 340)));
  await expect(viewer(page)).toHaveAttribute("data-line-count", "340");
  await expect(page.getByTestId("log-jump-latest")).toContainText("(30 new)");
  await expect(row(page, 1)).toBeVisible();
  expect(await scroller.evaluate((el) => el.scrollTop)).toBe(0);
  await page.getByTestId("log-jump-latest").click();
  await expect(row(page, 340)).toBeVisible();
  await expect(viewer(page)).toHaveAttribute("data-follow", "true");

  // XSS lines render as text; nothing ran, no image element was created.
  await expect(page.getByText(XSS_SCRIPT)).toHaveCount(0); // not in view yet (virtualized)
  await page.getByTestId("log-search").fill("window.__xss");
  await expect(page.getByTestId("log-search-count")).toHaveText("1 of 2");
  await expect(row(page, 4)).toContainText(XSS_SCRIPT);
  await expect(row(page, 5)).toContainText(XSS_IMG);
  expect(
    await page.evaluate(() => (window as unknown as { __xss?: number }).__xss),
  ).toBeUndefined();
  await expect(viewer(page).locator("img, script")).toHaveCount(0);

  // Search finds a known line; next/previous wrap around.
  await page.getByTestId("log-search").fill("needle-4242");
  await expect(page.getByTestId("log-search-count")).toHaveText("1 of 1");
  await expect(row(page, 150)).toBeVisible();
  await expect(row(page, 150).locator("mark.log-match-current")).toHaveText("needle-4242");
  await page.getByTestId("log-search").fill("apt line 2");
  await expect(page.getByTestId("log-search-count")).toHaveText(/^1 of \d+$/);
  await page.getByTestId("log-search").press("Enter");
  await expect(page.getByTestId("log-search-count")).toHaveText(/^2 of \d+$/);
  await page.getByTestId("log-search").press("Shift+Enter");
  await page.getByTestId("log-search").press("Shift+Enter");
  await expect(page.getByTestId("log-search-count")).toHaveText(/^(\d+) of \1$/);
  await page.getByTestId("log-search").press("Escape");

  // \r progress collapsed to its last state; colours are spans, not escape codes.
  await page.getByTestId("log-search").fill("download");
  await expect(row(page, 3)).toHaveText(/download 100%$/);
  await expect(row(page, 3)).not.toContainText("download 10%");
  await page.getByTestId("log-search").fill("coloured ok");
  await expect(row(page, 2)).toBeVisible();
  await page.getByTestId("log-search").fill("");
  await expect(row(page, 2).locator("span[style*='color']")).toHaveText("coloured ok");
  await expect(row(page, 2)).not.toContainText("\u001b");

  // The secret in the command is masked in the page.
  await expect(row(page, 1)).toContainText("--password ***");
  await expect(viewer(page)).not.toContainText("hunter22");

  // Timestamps on and off.
  await page.getByTestId("log-timestamps").check();
  await expect(row(page, 1).locator("time")).toBeVisible();
  await page.getByTestId("log-timestamps").uncheck();
  await expect(row(page, 1).locator("time")).toHaveCount(0);

  // A permalink opens scrolled to its line, highlighted.
  const other = await context.newPage();
  await other.goto(`${base()}/hosts/${hostId}#L200`);
  // The whole log first, so a failure below is about scrolling, not about the stream.
  await expect(other.getByTestId("log-viewer")).toHaveAttribute("data-line-count", "340");
  await expect(row(other, 200)).toBeVisible();
  await expect(row(other, 200)).toHaveClass(/log-row-target/);
  await expect(other.getByTestId("log-viewer")).toHaveAttribute("data-follow", "false");
  // Clicking a line number sets the hash and highlights that line.
  await row(other, 195).locator(".log-ln").click();
  await expect(other).toHaveURL(/#L195$/);
  await expect(row(other, 195)).toHaveClass(/log-row-target/);
  await other.close();

  // Download gives the raw log (ANSI and all, secrets masked), the same as the API.
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.getByTestId("log-download").click(),
  ]);
  const downloaded = fs.readFileSync((await download.path())!, "utf8");
  const api = await page.request.get(`${base()}/api/runs/${runId}/log`);
  expect(api.headers()["content-type"]).toContain("text/plain");
  expect(downloaded).toBe(await api.text());
  expect(downloaded.split("\n")).toHaveLength(341);
  expect(downloaded).toContain("\u001b[32mcoloured ok\u001b[0m and plain\n");
  expect(downloaded).toContain(`${XSS_SCRIPT}\n`);
  expect(downloaded).not.toContain("hunter22");
  const tail = await page.request.get(`${base()}/api/runs/${runId}/log`, {
    headers: { Range: "bytes=-18" },
  });
  expect(tail.status()).toBe(206);
  expect(await tail.text()).toBe("while reading 340\n");

  // Abort: the run's last line says so and the stream ends.
  await page.getByTestId("abort-button").click();
  await page.getByTestId("abort-dialog-confirm").click();
  await expect(page.getByTestId("log-stream-state")).toHaveText("Complete", { timeout: 20_000 });
  // The stream can end before the abort action has answered; the dialog then closes and gives
  // the focus back to the Abort button, so End must be pressed after that.
  await expect(page.getByTestId("abort-dialog")).toBeHidden();
  // End (keyboard) jumps to the latest line: the run's end.
  await scroller.focus();
  await expect(scroller).toBeFocused();
  await page.keyboard.press("End");
  await expect(viewer(page)).toHaveAttribute("data-follow", "true");
  await expect(row(page, 341)).toContainText("■ run aborted by operator during ConnectHost");
  await expect(row(page, 341)).toBeVisible();
  await expectNoReload(page);
});

test("a permalink to the newest line keeps it on screen as more lines arrive: revealing it is not the operator scrolling down", async ({
  page,
}) => {
  const { hostId, runId } = await seedRunningHost(`pve-log-link-${Date.now().toString(36)}`);
  await appendRunLog(db(), runId, entries("ConnectHost", numbered("early line", 1, 200)));
  await page.goto(`${base()}/hosts/${hostId}#L200`);
  await markNoReload(page);
  await expect(viewer(page)).toHaveAttribute("data-line-count", "200");
  await expect(row(page, 200)).toHaveClass(/log-row-target/);
  await expect(row(page, 200)).toBeVisible();
  // The line sits at the bottom of the box, where follow would stay: the reveal paused it.
  await expect(viewer(page)).toHaveAttribute("data-follow", "false");
  await appendRunLog(db(), runId, entries("ConnectHost", numbered("later line", 201, 300)));
  await expect(viewer(page)).toHaveAttribute("data-line-count", "300");
  await expect(page.getByTestId("log-jump-latest")).toContainText("(100 new)");
  await expect(row(page, 200)).toBeVisible();
  await expect(row(page, 300)).toHaveCount(0); // virtualized away: the view did not move
  await expect(viewer(page)).toHaveAttribute("data-follow", "false");
  await expectNoReload(page);
});

test("a real onboarding writes every command, its output and exit code, live, and the run's end", async ({
  page,
}) => {
  const node = await startLab({ state: "onboarded", storage: "lvm-thin", timeScale: 0.01 });
  labs.push(node);
  const response = await page.request.post(`${base()}/api/hosts`, {
    data: {
      name: "pve-log-real",
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: new URL(node.api.url).port,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: node.ssh.password,
    },
  });
  expect(response.status()).toBe(201);
  const { hostId } = (await response.json()) as { hostId: string };
  await page.goto(`${base()}/hosts/${hostId}`);
  await markNoReload(page);
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
    timeout: 30_000,
  });
  await expect(page.getByTestId("log-stream-state")).toHaveText("Complete");
  // A succeeded run's sections start collapsed; open CheckOperatingSystem.
  const section = page.getByTestId("log-section-CheckOperatingSystem");
  await expect(section).toBeVisible();
  await section.getByRole("button").click();
  await expect(section.getByRole("button")).toHaveAttribute("aria-expanded", "true");
  await expect(viewer(page).locator(".log-kind-command").first()).toContainText(
    "▶ CheckOperatingSystem",
  );
  await expect(viewer(page).locator(".log-kind-result").first()).toContainText("◀ exit 0 in");
  // The run's end is the log's last line (far below the fold of a 13-step run: read it raw).
  const hostBody = (await (await page.request.get(`${base()}/api/hosts/${hostId}`)).json()) as {
    run: { id: string };
  };
  const raw = await (await page.request.get(`${base()}/api/runs/${hostBody.run.id}/log`)).text();
  expect(raw.trimEnd().split("\n").pop()).toContain("■ run succeeded");
  expect(raw).not.toContain(node.ssh.password);
  // The password the console knows never reaches the page.
  await expect(viewer(page)).not.toContainText(node.ssh.password);
  await expectNoReload(page);
});
