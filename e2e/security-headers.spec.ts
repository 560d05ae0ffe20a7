import crypto from "node:crypto";
import { expect, test, type Page } from "./support/test";
import { consolePages } from "./console-pages";

/*
 * The hardening headers as a browser meets them: every page carries a nonce-based CSP and still
 * hydrates (the live indicator connects, which needs React and an EventSource under the policy),
 * no page causes a CSP violation, and a script smuggled into a page without the nonce is blocked.
 */

const FIXED_HEADERS: Record<string, RegExp> = {
  "referrer-policy": /^no-referrer$/,
  "x-content-type-options": /^nosniff$/,
  "x-frame-options": /^DENY$/,
  "cross-origin-opener-policy": /^same-origin$/,
  "permissions-policy": /camera=\(\)/,
};

type Violation = { directive: string; blocked: string };

/** Records CSP violations (the DOM event) and CSP console errors of every page of `page`. */
async function watchViolations(page: Page): Promise<{ violations: () => Promise<Violation[]> }> {
  const consoleErrors: Violation[] = [];
  page.on("console", (message) => {
    if (/Content Security Policy/i.test(message.text())) {
      consoleErrors.push({ directive: "console", blocked: message.text() });
    }
  });
  await page.addInitScript(() => {
    const seen: Array<{ directive: string; blocked: string }> = [];
    (window as unknown as { __cspViolations: typeof seen }).__cspViolations = seen;
    document.addEventListener("securitypolicyviolation", (event) => {
      seen.push({ directive: event.violatedDirective, blocked: event.blockedURI });
    });
  });
  return {
    violations: async () => [
      ...consoleErrors,
      ...(await page.evaluate(
        () => (window as unknown as { __cspViolations?: Violation[] }).__cspViolations ?? [],
      )),
    ],
  };
}

function policyOf(header: string | undefined): Map<string, string[]> {
  const directives = new Map<string, string[]>();
  for (const part of (header ?? "").split(";")) {
    const [name, ...values] = part.trim().split(/\s+/);
    if (name) directives.set(name, values);
  }
  return directives;
}

async function addUnreachableHost(page: Page): Promise<string> {
  // Port 1 on loopback refuses at once: the host exists, its onboarding fails fast, nothing hangs.
  const response = await page.request.post("/api/hosts", {
    data: {
      name: `csp-${crypto.randomBytes(3).toString("hex")}`,
      address: "127.0.0.1",
      sshPort: 1,
      sshUser: "root",
      authMethod: "password",
      password: "not-used-anywhere",
    },
  });
  expect(response.status(), await response.text()).toBe(201);
  return ((await response.json()) as { hostId: string }).hostId;
}

async function addPlan(page: Page): Promise<string> {
  const slug = `csp-${crypto.randomBytes(3).toString("hex")}`;
  const response = await page.request.post("/api/catalog/plans", {
    data: { slug, name: `CSP check ${slug}` },
  });
  expect(response.status(), await response.text()).toBe(201);
  return ((await response.json()) as { planId: string }).planId;
}

test("every console page carries a nonce-based CSP and the hardening headers, hydrates, and causes no CSP violation", async ({
  page,
  consoleErrors,
}) => {
  // /no-such-page answers 404 on purpose: the browser logs that document's status.
  consoleErrors.allow(/no-such-page: Failed to load resource: .*status of 404/);
  const hostId = await addUnreachableHost(page);
  const watch = await watchViolations(page);
  // Every page of the app (by glob), one with a filter, and the 404 page.
  const paths = [
    ...consolePages({ hostId, planId: await addPlan(page) }),
    "/audit?action=host.create",
    "/no-such-page",
  ];
  const nonces = new Set<string>();
  for (const path of paths) {
    const response = await page.goto(path);
    expect(response, path).not.toBeNull();
    const headers = response!.headers();
    for (const [name, pattern] of Object.entries(FIXED_HEADERS)) {
      expect(headers[name], `${path}: ${name}`).toMatch(pattern);
    }
    const policy = policyOf(headers["content-security-policy"]);
    const scriptSrc = policy.get("script-src") ?? [];
    const nonce = scriptSrc.find((value) => value.startsWith("'nonce-"));
    expect(nonce, `${path}: script-src has a nonce`).toBeDefined();
    expect(scriptSrc, path).toContain("'strict-dynamic'");
    expect(scriptSrc, path).not.toContain("'unsafe-inline'");
    expect(scriptSrc, path).not.toContain("'unsafe-eval'");
    expect(policy.get("frame-ancestors"), path).toEqual(["'none'"]);
    expect(policy.get("object-src"), path).toEqual(["'none'"]);
    expect(policy.get("base-uri"), path).toEqual(["'self'"]);
    expect(policy.get("form-action"), path).toEqual(["'self'"]);
    nonces.add(nonce!);

    // Every script the server wrote into the page carries this response's nonce (scripts
    // Next.js's runtime adds later are trusted through 'strict-dynamic' and need none).
    const scriptTags = (await response!.text()).match(/<script\b[^>]*>/g) ?? [];
    expect(scriptTags.length, path).toBeGreaterThan(0);
    for (const tag of scriptTags) expect(tag, path).toContain(`nonce="${nonce!.slice(7, -1)}"`);

    // Hydrated: the live indicator is React state fed by an EventSource to /api/live (the
    // console's pages have it; the 404, sign-in and forbidden pages are outside that layout).
    if (await page.getByTestId("live-indicator").count()) {
      await expect(page.getByTestId("live-indicator"), path).toHaveAttribute("data-status", "live");
    } else {
      await page.waitForLoadState("networkidle");
    }
    expect(await watch.violations(), path).toEqual([]);
  }
  // A fresh nonce per response.
  expect(nonces.size).toBe(paths.length);
});

test("a script injected into a page without the nonce does not run and is reported as a violation", async ({
  page,
  consoleErrors,
}) => {
  // The refusal of the injected script is the point of this test; the browser says so.
  consoleErrors.allow(/Content Security Policy/);
  const watch = await watchViolations(page);
  // Only the page's own document: a later client request to /hosts (a router refresh after a
  // live update from another spec's host) must pass untouched, and must not still be in this
  // handler when the test closes the page ("Response has been disposed").
  await page.route("**/hosts", async (route) => {
    if (route.request().resourceType() !== "document") return route.continue();
    const response = await route.fetch();
    const html = (await response.text()).replace(
      "</body>",
      "<script>window.__injected = true</script></body>",
    );
    await route.fulfill({ response, body: html });
  });
  await page.goto("/hosts");
  await expect(page.getByTestId("live-indicator")).toHaveAttribute("data-status", "live");
  expect(await page.evaluate(() => (window as { __injected?: boolean }).__injected)).toBe(
    undefined,
  );
  const violations = await watch.violations();
  expect(violations.some((violation) => /script-src/.test(violation.directive))).toBe(true);
  await page.unrouteAll({ behavior: "ignoreErrors" });
});

test("API answers carry a policy that loads nothing, plus nosniff and no-referrer", async ({
  request,
}) => {
  const response = await request.get("/api/hosts");
  expect(response.status()).toBe(200);
  const headers = response.headers();
  expect(policyOf(headers["content-security-policy"]).get("default-src")).toEqual(["'none'"]);
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["referrer-policy"]).toBe("no-referrer");
});

test("built assets carry the fixed headers", async ({ page, request }) => {
  await page.goto("/hosts");
  const scriptUrl = await page.evaluate(
    () => Array.from(document.scripts).find((script) => script.src.includes("/_next/static/"))!.src,
  );
  const response = await request.get(scriptUrl);
  expect(response.status()).toBe(200);
  expect(response.headers()["x-content-type-options"]).toBe("nosniff");
  expect(response.headers()["cross-origin-resource-policy"]).toBe("same-origin");
});

test("a client on plain HTTP cannot make the console pin itself to HTTPS (no trusted proxy here)", async ({
  request,
}) => {
  const response = await request.get("/login", { headers: { "X-Forwarded-Proto": "https" } });
  expect(response.status()).toBe(200);
  expect(response.headers()["strict-transport-security"]).toBeUndefined();
});
