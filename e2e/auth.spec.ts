import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { expect, test, type Browser, type Page } from "./support/test";
import pg from "pg";
import { startLab, type LabNode } from "../lab";
import { E2E_ADMIN } from "./auth-state";
import { base } from "./support/console";

const root = path.resolve(import.meta.dirname, "..");

const labs: LabNode[] = [];
test.afterAll(async () => {
  await Promise.all(labs.map((lab) => lab.stop()));
});

const OPERATOR = { name: "e2e-operator", password: "operator password 1234" };
const VIEWER = { name: "e2e-viewer", password: "viewer password 12345" };

/** A browser context nobody is signed in to (the config's default is the admin's state). */
async function anonymousPage(browser: Browser): Promise<Page> {
  const context = await browser.newContext({ storageState: { cookies: [], origins: [] } });
  return context.newPage();
}

async function signInAs(browser: Browser, user: { name: string; password: string }) {
  const page = await anonymousPage(browser);
  await page.goto(`${base()}/hosts`);
  await expect(page).toHaveURL(/\/login\?next=%2Fhosts$/);
  await page.getByLabel("User name").fill(user.name);
  await page.getByLabel("Password").fill(user.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page).toHaveURL(/\/hosts$/);
  await expect(page.getByTestId("signed-in-user")).toHaveText(user.name);
  return page;
}

async function withDatabase<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: process.env.E2E_DATABASE_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * What the engine writes on its own while other specs' hosts run (their progress, logs, the
 * worker's heartbeat). No request of this spec can grow these without also growing `runs`.
 */
const BACKGROUND_TABLES = [
  "events",
  "step_visits",
  "run_log_chunks",
  "run_log_heads",
  "run_log_sources",
  "worker_heartbeats",
];

/** Row counts of every other table: a refused request must leave all of them as they were. */
const tableCounts = () =>
  withDatabase(async (client) => {
    const tables = await client.query<{ name: string }>(
      `select format('%I.%I', table_schema, table_name) as name from information_schema.tables
       where table_schema = 'public' and table_type = 'BASE TABLE'
         and not (table_name = any($1::text[]))`,
      [BACKGROUND_TABLES],
    );
    const counts: Record<string, number> = {};
    for (const { name } of tables.rows) {
      counts[name] = (
        await client.query<{ n: number }>(`select count(*)::int as n from ${name}`)
      ).rows[0]!.n;
    }
    return counts;
  });

/** What a retry of `runId` or a host creation would change, and the audit log's size. */
const retryAndCreateTargets = () =>
  withDatabase(async (client) => {
    const count = async (query: string, values: unknown[] = []) =>
      (await client.query<{ n: number }>(query, values)).rows[0]!.n;
    const run = await client.query(
      `select status, current_step, failed_step, updated_at from runs where id = $1`,
      [runId],
    );
    return {
      run: run.rows[0] as unknown,
      runVisits: await count(`select count(*)::int as n from step_visits where run_id = $1`, [
        runId,
      ]),
      runEvents: await count(`select count(*)::int as n from events where run_id = $1`, [runId]),
      hosts: await count(`select count(*)::int as n from hosts`),
      credentials: await count(`select count(*)::int as n from credentials`),
      auditRows: await count(`select count(*)::int as n from audit_log`),
    };
  });

test.describe.configure({ mode: "serial" });

test("setup happened once (global setup, through the printed token) and /setup is gone", async ({
  browser,
  page,
}) => {
  await page.goto(`${base()}/hosts`);
  await expect(page.getByTestId("signed-in-user")).toHaveText(E2E_ADMIN.name);
  await expect(page.getByTestId("signed-in-role")).toHaveText("admin");
  const stranger = await anonymousPage(browser);
  await stranger.goto(`${base()}/setup`);
  await expect(stranger).toHaveURL(/\/login$/);
  const audit = await withDatabase((client) =>
    client.query(`select actor_name, outcome from audit_log where action = 'auth.setup'`),
  );
  expect(audit.rows).toEqual([{ actor_name: E2E_ADMIN.name, outcome: "success" }]);
});

test("the admin creates an operator and a viewer on the Users page", async ({ page }) => {
  await page.goto(`${base()}/hosts`);
  await page.getByRole("link", { name: "Users" }).click();
  await expect(page).toHaveURL(/\/users$/);
  for (const [user, role] of [
    [OPERATOR, "operator"],
    [VIEWER, "viewer"],
  ] as const) {
    await page.getByLabel("New user name").fill(user.name);
    await page.getByLabel("Role", { exact: true }).selectOption(role);
    await page.getByLabel("Initial password").fill(user.password);
    await page.getByRole("button", { name: "Create user" }).click();
    await expect(page.getByTestId(`user-${user.name}`)).toContainText(user.name);
    await expect(page.getByLabel(`Role of ${user.name}`)).toHaveValue(role);
  }
});

let hostId = "";
let runId = "";

test("the operator signs in, adds a lab host and aborts its run", async ({ browser }) => {
  const node = await startLab();
  labs.push(node);
  node.faults.refuseConnections = true; // ConnectHost keeps retrying: the run stays running
  const page = await signInAs(browser, OPERATOR);
  await expect(page.getByTestId("signed-in-role")).toHaveText("operator");
  await expect(page.getByRole("link", { name: "Users" })).toHaveCount(0);
  await page.getByTestId("add-host").click();
  await page.getByLabel("Name").fill("pve-auth");
  await page.getByLabel("Address").fill(node.ssh.host);
  await page.getByLabel("SSH port").fill(String(node.ssh.port));
  await page.getByLabel("SSH user").fill(node.ssh.username);
  await page.getByLabel("SSH password").fill(node.ssh.password);
  await page.getByTestId("submit-host").click();
  await expect(page).toHaveURL(/\/hosts\/[0-9a-f-]{36}$/);
  hostId = page.url().split("/").at(-1)!;
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "onboarding");
  await page.getByTestId("abort-button").click();
  await page.getByTestId("abort-dialog-confirm").click();
  await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "aborted", {
    timeout: 15_000,
  });
  await expect(page.getByTestId("abort-result").first()).toContainText("aborted by operator");

  const audit = await withDatabase((client) =>
    client.query<{ action: string; target: string }>(
      `select action, target from audit_log where actor_name = $1 order by id`,
      [OPERATOR.name],
    ),
  );
  runId = audit.rows.find((row) => row.action === "run.abort")!.target.replace("run:", "");
  expect(audit.rows.map((row) => row.action)).toEqual(["auth.sign_in", "host.create", "run.abort"]);
});

test("the viewer sees the host and its run but has no Add/Retry/Abort, and a forced POST is 403", async ({
  browser,
}) => {
  const page = await signInAs(browser, VIEWER);
  await expect(page.getByTestId("host-row-pve-auth")).toBeVisible();
  await expect(page.getByTestId("add-host")).toHaveCount(0);
  await page.getByTestId("host-row-pve-auth").getByRole("link", { name: "pve-auth" }).click();
  await expect(page).toHaveURL(new RegExp(`/hosts/${hostId}$`));
  await expect(page.getByTestId("abort-result").first()).toContainText("aborted by operator");
  await expect(page.getByTestId("retry-button")).toHaveCount(0);
  await expect(page.getByTestId("abort-button")).toHaveCount(0);
  await expect(page.getByTestId("reonboard-button")).toHaveCount(0);

  // Other specs' hosts keep the engine writing in the background (events, log chunks), so "no
  // change" is judged on what a refused retry or create would have touched.
  const before = await retryAndCreateTargets();
  // The viewer's own session cookie, sent by hand: the server refuses, whatever the UI shows.
  const retry = await page.request.post(`${base()}/api/runs/${runId}/retry`);
  expect(retry.status()).toBe(403);
  const create = await page.request.post(`${base()}/api/hosts`, {
    data: {
      name: "pve-viewer",
      address: "10.0.0.1",
      sshPort: 22,
      sshUser: "root",
      authMethod: "password",
      password: "x",
    },
  });
  expect(create.status()).toBe(403);
  await page.goto(`${base()}/hosts/new`);
  await expect(page).toHaveURL(/\/forbidden\?need=operator$/);
  // Nothing changed but the audit log, which names each refusal with the viewer as actor.
  const after = await retryAndCreateTargets();
  expect({ ...after, auditRows: 0 }).toEqual({ ...before, auditRows: 0 });
  const denied = await withDatabase((client) =>
    client.query<{ target: string; outcome: string }>(
      `select target, outcome from audit_log where action = 'access.denied' and actor_name = $1
       order by id`,
      [VIEWER.name],
    ),
  );
  expect(denied.rows).toEqual([
    { target: `POST /api/runs/${runId}/retry`, outcome: "denied" },
    { target: "POST /api/hosts", outcome: "denied" },
    { target: "page /hosts/new", outcome: "denied" },
  ]);
  expect(after.auditRows).toBe(before.auditRows + 3);
});

test("a browser naming a new X-Forwarded-For on every guess is still limited after five", async ({
  browser,
}) => {
  const page = await anonymousPage(browser);
  const name = `e2e-guessed-${crypto.randomBytes(3).toString("hex")}`;
  const messages: string[] = [];
  for (let guess = 1; guess <= 6; guess++) {
    // Straight to the console (no proxy is trusted here): the header is the client's own word.
    await page.setExtraHTTPHeaders({ "X-Forwarded-For": `198.51.100.${guess}` });
    await page.goto(`${base()}/login`);
    await page.getByLabel("User name").fill(name);
    await page.getByLabel("Password").fill(`guess number ${guess}`);
    await page.getByRole("button", { name: "Sign in" }).click();
    const alert = page.getByTestId("form-error");
    await expect(alert).toBeVisible();
    messages.push((await alert.textContent()) ?? "");
  }
  expect(messages.slice(0, 5).every((text) => /do not match/.test(text))).toBe(true);
  expect(messages[5]).toMatch(/Too many failed sign-ins .* Try again in \d+ minutes?/);
  await page.context().close();
});

test("disabling a signed-in user sends their open page to the sign-in page, without a reload by them", async ({
  browser,
  page: adminPage,
  consoleErrors,
}) => {
  // A request the page has in flight as the user is disabled is refused (401) before the live
  // stream's signed-out sends it away: that refusal is the behaviour under test, not an error.
  consoleErrors.allow(/Failed to load resource: .*status of 401/);
  const user = {
    name: `e2e-leaver-${crypto.randomBytes(3).toString("hex")}`,
    password: "leaver password 12345",
  };
  const created = await adminPage.request.post(`${base()}/api/users`, {
    data: { ...user, role: "viewer" },
  });
  expect(created.status()).toBe(201);
  const { id } = (await created.json()) as { id: string };

  const page = await signInAs(browser, user);
  await expect(page.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  const disabled = await adminPage.request.patch(`${base()}/api/users/${id}`, {
    data: { disabled: true },
  });
  expect(disabled.status()).toBe(200);
  // The server ends the open live stream with `signed-out` as the change commits and the page
  // goes to sign in by itself. That it is the change's notification and not the stream's 15-s
  // re-check that ends it is lib/auth/stream-access.int.test.ts's to prove; here, that the page
  // follows (within two re-checks, so a busy machine is not a failure).
  await expect(page).toHaveURL(/\/login\?next=%2Fhosts$/, { timeout: 35_000 });
  await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
  await page.context().close();
});

test("sign out everywhere else: another browser's open page goes to sign-in at once, this one stays", async ({
  browser,
  consoleErrors,
}) => {
  // The other browser's requests in flight as its session ends are refused (401): expected.
  consoleErrors.allow(/Failed to load resource: .*status of 401/);
  const elsewhere = await signInAs(browser, OPERATOR);
  await expect(elsewhere.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  const here = await signInAs(browser, OPERATOR);
  await here.goto(`${base()}/account`);
  const rows = here.getByTestId("session-table").locator("tbody tr");
  const sessions = await rows.count();
  expect(sessions).toBeGreaterThanOrEqual(2);
  const current = rows.filter({ hasText: "this one" });
  await expect(current).toHaveCount(1);
  // Recorded at sign-in: the browser (Chromium here) and the address the console saw.
  await expect(current).toContainText(/Chrom/);
  await expect(current).toContainText("127.0.0.1");

  await here.getByTestId("sign-out-others").click();
  const dialog = here.getByTestId("sign-out-others-dialog");
  await expect(dialog).toContainText(
    `Ends ${sessions - 1} other session${sessions === 2 ? "" : "s"} of ${OPERATOR.name}`,
  );
  await expect(dialog).toContainText("This browser stays signed in.");
  await dialog.getByRole("button", { name: /^End \d+ other sessions?$/ }).click();

  // By itself (the notification's promptness: lib/auth/stream-access.int.test.ts).
  await expect(elsewhere).toHaveURL(/\/login\?next=%2Fhosts$/, { timeout: 35_000 });
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText("this one");
  await expect(here.getByTestId("sign-out-others")).toBeDisabled();
  await here.reload();
  await expect(here).toHaveURL(/\/account$/);
  await elsewhere.context().close();
  await here.context().close();
});

/** Every page route under app/, from the file system (a new page cannot escape the crawl). */
function pagePaths(): string[] {
  const files = (fs.readdirSync(path.join(root, "app"), { recursive: true }) as string[]).filter(
    (file) => /(^|\/)page\.tsx$/.test(file),
  );
  return files.map((file) => {
    const segments = path
      .dirname(file)
      .split(path.sep)
      .filter((segment) => segment !== "." && !/^\(.+\)$/.test(segment))
      .map((segment) => (/^\[.+\]$/.test(segment) ? crypto.randomUUID() : segment));
    return `/${segments.join("/")}`;
  });
}

// Pages for people who are not signed in: sign-in itself, the setup page (a redirect to /login
// once an admin exists) and the static "not allowed" notice.
const PUBLIC_PAGES = new Set(["/login", "/setup", "/forbidden"]);

test("unauthenticated crawl: every page redirects to /login, never content, never a 500", async () => {
  const paths = pagePaths();
  expect(paths).toEqual(
    expect.arrayContaining(["/hosts", "/hosts/new", "/catalog", "/users", "/account"]),
  );
  for (const pagePath of paths) {
    const response = await fetch(`${base()}${pagePath}`, { redirect: "manual" });
    const location = response.headers.get("location") ?? "";
    const body = await response.text();
    if (PUBLIC_PAGES.has(pagePath)) {
      expect(response.status, pagePath).toBeLessThan(500);
      continue;
    }
    if (pagePath === "/") {
      expect([307, 308], pagePath).toContain(response.status); // → /hosts → /login
      continue;
    }
    expect(response.status, `${pagePath}: ${body.slice(0, 200)}`).toBe(307);
    expect(location, pagePath).toMatch(/\/login(\?next=|$)/);
  }
});

test("unauthenticated crawl: every server action id in the build, posted without a cookie, changes nothing", async () => {
  const manifest = JSON.parse(
    fs.readFileSync(path.join(root, ".next", "server", "server-reference-manifest.json"), "utf8"),
  ) as { node: Record<string, { workers: Record<string, unknown>; exportedName: string }> };
  const actions = Object.entries(manifest.node);
  expect(actions.map(([, action]) => action.exportedName)).toEqual(
    expect.arrayContaining(["createHostAction", "abortRunAction", "createUserAction"]),
  );
  // The doors for people without a session go last: a failed sign-in is audited and counted.
  const PUBLIC = ["signInAction", "completeSetupAction"];
  const ordered = [
    ...actions.filter(([, action]) => !PUBLIC.includes(action.exportedName)),
    ...actions.filter(([, action]) => PUBLIC.includes(action.exportedName)),
  ];
  const before = await tableCounts();
  let countsChecked = false;
  for (const [id, action] of ordered) {
    if (!countsChecked && PUBLIC.includes(action.exportedName)) {
      expect(await tableCounts()).toEqual(before);
      countsChecked = true;
    }
    // Post to a page the action belongs to, as the browser does.
    const worker = Object.keys(action.workers)[0]!;
    const pagePath =
      "/" +
      worker
        .replace(/^app\//, "")
        .replace(/\/page$/, "")
        .split("/")
        .filter((segment) => !/^\(.+\)$/.test(segment))
        .map((segment) => (/^\[.+\]$/.test(segment) ? crypto.randomUUID() : segment))
        .join("/");
    const response = await fetch(`${base()}${pagePath}`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "next-action": id,
        accept: "text/x-component",
        "content-type": "text/plain;charset=UTF-8",
      },
      body: JSON.stringify([
        null,
        {
          runId: crypto.randomUUID(),
          hostId: crypto.randomUUID(),
          name: "crawl",
          role: "admin",
          password: "a long enough password",
        },
      ]),
    });
    const body = await response.text();
    const label = `${action.exportedName} via ${pagePath}: ${response.status} ${body.slice(0, 300)}`;
    expect(response.status, label).toBeLessThan(500);
    expect(body, label).not.toContain('"ok":true');
    if (
      response.status === 200 &&
      !["signInAction", "completeSetupAction"].includes(action.exportedName)
    ) {
      // The action ran its own check first and said so (or a redirect to sign in was returned).
      // A redirect from an action travels in x-action-redirect (sign-out sends you to /login).
      const redirectedTo = response.headers.get("x-action-redirect") ?? "";
      expect(`${redirectedTo} ${body}`, label).toMatch(/not signed in|^\/login/);
    }
  }
  expect(countsChecked).toBe(true);
});
