import crypto from "node:crypto";
import { expect, test } from "./support/test";
import pg from "pg";
import { base, expectNoReload, markNoReload } from "./support/console";

/**
 * The banner's path from the table npm start's supervisor writes to every page: restarts are
 * recorded here as the supervisor records them (lib/supervisor/record-restarts.ts: rows plus a
 * live notification in one transaction); that the supervisor does so for a killed process is
 * proven in test/npm-start-supervision.int.test.ts.
 */
const marker = `e2e-${crypto.randomBytes(4).toString("hex")}`;

async function database<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: process.env.E2E_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

test.afterAll(() =>
  database((client) =>
    client.query("delete from console_process_restarts where ending like $1", [`%${marker}%`]),
  ),
);

test("a crash loop shows as a banner on every console page as it happens, and goes once it is over", async ({
  page,
}) => {
  await page.goto(`${base()}/hosts`);
  await expect(page.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  await expect(page.getByTestId("crash-loop-banner")).toHaveCount(0);
  await markNoReload(page);

  // Five worker restarts; the oldest ended 4 min 35 s ago, so the loop is over in about 25 s.
  await database(async (client) => {
    await client.query("begin");
    for (const secondsAgo of [275, 200, 120, 60, 2]) {
      await client.query(
        `insert into console_process_restarts (process, ended_at, ending, up_ms, restart_delay_ms)
         values ('worker', now() - make_interval(secs => $1), $2, 1000, 1000)`,
        [secondsAgo, `killed by SIGKILL (${marker})`],
      );
    }
    await client.query(
      `select pg_notify('clupilot_live', '{"type":"process-restart","process":"worker"}')`,
    );
    await client.query("commit");
  });

  const banner = page.getByTestId("crash-loop-banner");
  await expect(banner).toContainText(`The worker restarted 5 times in 5 minutes; last exit at`);
  await expect(banner).toContainText(`killed by SIGKILL (${marker}) — see the console's log`);
  await expectNoReload(page);

  await page
    .getByRole("navigation", { name: "Main" })
    .getByRole("link", { name: "Catalog" })
    .click();
  await expect(page).toHaveURL(/\/catalog$/);
  await expect(page.getByTestId("crash-loop-banner")).toContainText("The worker restarted 5 times");

  // Nothing announces the end of a loop: the page asks again when it would be over.
  await expect(page.getByTestId("crash-loop-banner")).toHaveCount(0, { timeout: 45_000 });
});
