import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { expect, test } from "./support/test";
import pg from "pg";
import { startLab, type LabNode } from "../lab";
import { E2E_ADMIN } from "./auth-state";
import { apiGetRoutes, consolePages } from "./console-pages";

/*
 * Issue 7's secrets test, against the console as `npm start` runs it: a host onboarded with a
 * known SSH password (its onboarding stores a real Proxmox API token secret, as CreateApiToken
 * does), a host with a known private key and passphrase, a personal API token, the admin's
 * password. Then every one of those plaintexts is searched for in a dump of every table, the
 * database's own files on disk (heap, WAL, server log), every page and every GET route of the
 * app (streams included), and the web server's and worker's log: 0 hits.
 */

const labs: LabNode[] = [];
test.afterAll(async () => Promise.all(labs.map((lab) => lab.stop())));

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run through playwright.config.ts`);
  return value;
};

type Haystack = { where: string; text: string };

/** The plaintexts and the spellings they could leak in (JSON-escaped, URL-encoded). */
function needles(secrets: Record<string, string>): Array<{ name: string; spelling: string }> {
  return Object.entries(secrets).flatMap(([name, secret]) =>
    [...new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])].map(
      (spelling) => ({ name, spelling }),
    ),
  );
}

function hits(haystacks: Haystack[], secrets: Record<string, string>): string[] {
  const found: string[] = [];
  for (const { name, spelling } of needles(secrets)) {
    for (const { where, text } of haystacks) {
      if (text.includes(spelling)) found.push(`${name} in ${where}`);
    }
  }
  return found;
}

/** Every string leaf of a JSON secret (a credential's `{ password }`, `{ privateKey, … }`). */
function leaves(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (value && typeof value === "object") return Object.values(value).flatMap(leaves);
  return [];
}

/** Reads an SSE stream for a moment: what it sends on connect is what a viewer gets. */
async function readStream(url: string, cookie: string): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 1_500);
  let text = "";
  try {
    const response = await fetch(url, { headers: { cookie }, signal: controller.signal });
    const reader = response.body!.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
  } catch {
    // aborted after the moment: expected
  } finally {
    clearTimeout(timer);
  }
  return text;
}

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((file) => path.join(dir, file))
    .filter((file) => {
      try {
        return fs.statSync(file).isFile();
      } catch {
        return false; // removed meanwhile (a WAL segment recycled)
      }
    });
}

test("no secret in any table, database file, page, API answer or log", async ({
  page,
  consoleErrors,
}) => {
  // The crawl names a plan that does not exist (a random id): that page is a 404 on purpose.
  consoleErrors.allow(/\/versions\/new: Failed to load resource: .*status of 404/);
  test.setTimeout(240_000);
  const tag = crypto.randomBytes(4).toString("hex");
  const sshPassword = `leak-ssh-password-${tag}-${crypto.randomBytes(8).toString("hex")}`;
  const passphrase = `leak-passphrase-${tag}-${crypto.randomBytes(8).toString("hex")}`;
  const { privateKey } = crypto.generateKeyPairSync("ed25519", {
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
    publicKeyEncoding: { type: "spki", format: "pem" },
  });

  // 1. A lab host onboarded with a known password: its run creates and stores an API token.
  const node = await startLab({
    state: "onboarded",
    storage: "lvm-thin",
    timeScale: 0.01,
    password: sshPassword,
  });
  labs.push(node);
  const withPassword = await page.request.post("/api/hosts", {
    data: {
      name: `leak-pw-${tag}`,
      address: node.ssh.host,
      sshPort: node.ssh.port,
      apiPort: node.api ? Number(new URL(node.api.url).port) : 8006,
      sshUser: node.ssh.username,
      authMethod: "password",
      password: sshPassword,
    },
  });
  expect(withPassword.status()).toBe(201);
  const { hostId, runId } = (await withPassword.json()) as { hostId: string; runId: string };

  // 2. A host with a known private key and passphrase (unreachable: its onboarding fails fast,
  //    after the worker has unsealed the key to try it).
  const withKey = await page.request.post("/api/hosts", {
    data: {
      name: `leak-key-${tag}`,
      address: "127.0.0.1",
      sshPort: 1,
      sshUser: "root",
      authMethod: "private_key",
      privateKey,
      passphrase,
    },
  });
  expect(withKey.status()).toBe(201);
  const keyHost = (await withKey.json()) as { hostId: string; runId: string };

  // 3. A personal API token: its one showing is this answer; nowhere else.
  const tokenResponse = await page.request.post("/api/tokens", { data: { label: `leak-${tag}` } });
  expect(tokenResponse.status()).toBe(201);
  const { token: apiToken, id: tokenId } = (await tokenResponse.json()) as {
    token: string;
    id: string;
  };
  // The token is used once, so it passes through the server as automation sends it.
  expect(
    (
      await page.request.get("/api/hosts", { headers: { authorization: `Bearer ${apiToken}` } })
    ).status(),
  ).toBe(200);

  await expect
    .poll(
      async () =>
        ((await (await page.request.get(`/api/hosts/${hostId}`)).json()) as { state: string })
          .state,
      { timeout: 150_000, intervals: [1_000] },
    )
    .toBe("active");
  await expect
    .poll(
      async () =>
        (
          (await (await page.request.get(`/api/hosts/${keyHost.hostId}`)).json()) as {
            state: string;
          }
        ).state,
      { timeout: 60_000, intervals: [1_000] },
    )
    .toBe("failed");

  // Every secret the console holds, unsealed with its own key: the SSH password, the private key
  // and passphrase, the Proxmox API token secret CreateApiToken stored, the console's SSH key.
  const db = new pg.Client({ connectionString: env("E2E_DATABASE_URL") });
  await db.connect();
  const secrets: Record<string, string> = {
    "SSH password": sshPassword,
    passphrase,
    "personal API token": apiToken,
    "admin password": E2E_ADMIN.password,
  };
  for (const line of privateKey
    .split("\n")
    .filter((l) => l.length > 20 && !l.startsWith("-----"))) {
    secrets[`private key line ${line.slice(0, 6)}…`] = line;
  }
  try {
    process.env.CLUPILOT_DATA_DIR = env("E2E_DATA_DIR");
    const { unseal } = await import("../lib/secrets/seal");
    // Kinds holding secrets (a console_key credential only names which console key to use).
    const { rows: sealedRows } = await db.query<{ kind: string; sealed: string }>(
      `select kind::text, sealed from credentials where kind in ('password', 'private_key', 'api_token')
       union all select 'console SSH key', sealed_private_key from console_keys`,
    );
    expect(sealedRows.map((row) => row.kind)).toEqual(expect.arrayContaining(["api_token"]));
    for (const { kind, sealed } of sealedRows) {
      let plain: unknown = unseal(sealed);
      try {
        plain = JSON.parse(plain as string);
      } catch {
        // a bare string secret (the API token's)
      }
      for (const leaf of leaves(plain)) {
        for (const line of leaf
          .split("\n")
          .filter((l) => l.length >= 12 && !l.startsWith("-----"))) {
          secrets[`${kind} (${line.slice(0, 4)}…)`] = line;
        }
      }
    }
    expect(Object.keys(secrets).some((name) => name.startsWith("api_token"))).toBe(true);

    const haystacks: Haystack[] = [];

    // The database, table by table (what pg_dump would write), every schema.
    const { rows: tables } = await db.query<{ schema: string; name: string }>(
      `select table_schema as schema, table_name as name from information_schema.tables
       where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')`,
    );
    for (const { schema, name } of tables) {
      const { rows } = await db.query<{ row: string }>(
        `select t::text as row from "${schema}"."${name}" t`,
      );
      haystacks.push({ where: `table ${schema}.${name}`, text: rows.map((r) => r.row).join("\n") });
    }

    // The crawl: every page (the HTML with its RSC payload, and the DOM after hydration) and
    // every GET route, as the signed-in admin.
    const ids = {
      hostId,
      runId,
      planId: crypto.randomUUID(),
      rotationId: crypto.randomUUID(),
      targetId: crypto.randomUUID(),
      tokenId,
    };
    const pages = [...consolePages(ids), `/hosts/${keyHost.hostId}`];
    for (const pagePath of pages) {
      const response = await page.goto(pagePath);
      haystacks.push({ where: `page ${pagePath} (HTML)`, text: (await response?.text()) ?? "" });
      await page.waitForLoadState("networkidle").catch(() => undefined);
      haystacks.push({ where: `page ${pagePath} (DOM)`, text: await page.content() });
    }
    const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const routes = [
      ...apiGetRoutes(ids),
      `/api/hosts/${keyHost.hostId}`,
      `/api/runs/${keyHost.runId}`,
      `/api/runs/${keyHost.runId}/log`,
      `/api/runs/${runId}/log?download=1`,
      "/api/tokens?all=1",
    ];
    for (const route of routes) {
      const url = new URL(route, env("E2E_BASE_URL")).toString();
      if (route.endsWith("/stream") || route === "/api/live") {
        haystacks.push({ where: `stream ${route}`, text: await readStream(url, cookie) });
        continue;
      }
      const response = await page.request.get(route);
      haystacks.push({ where: `GET ${route} (${response.status()})`, text: await response.text() });
    }
    expect(pages.length).toBeGreaterThanOrEqual(10);
    expect(routes.length).toBeGreaterThanOrEqual(15);

    // The web server's and worker's output (npm start's terminal), and the database's files.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const dataDir = env("E2E_DATA_DIR");
    haystacks.push({
      where: "web server and worker log",
      text: fs.readFileSync(path.join(dataDir, "console.log"), "utf8"),
    });
    await db.query("checkpoint").catch(() => undefined); // flush what is only in shared buffers
    for (const file of filesUnder(path.join(dataDir, "postgres"))) {
      haystacks.push({
        where: `database file ${path.relative(dataDir, file)}`,
        text: fs.readFileSync(file, "latin1"),
      });
    }

    // Sanity: the search can find things (the host's name is in the dump, pages and log).
    const seen = hits(haystacks, { "host name": `leak-pw-${tag}` });
    expect(seen.some((hit) => hit.includes("table public.hosts"))).toBe(true);
    expect(seen.some((hit) => hit.includes("page /hosts"))).toBe(true);

    expect(hits(haystacks, secrets)).toEqual([]);
  } finally {
    await db.end();
  }
});
