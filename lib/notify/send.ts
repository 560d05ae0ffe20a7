import type { WebhookRequest } from "./formats";

/** A request that has not answered in this long has failed (the worker retries it later). */
export const DEFAULT_DELIVERY_TIMEOUT_MS = 10_000;

export type AuthHeader = { name: string; value: string };

export type SendOutcome =
  { ok: true; status: number } | { ok: false; status: number | null; error: string };

/** Characters of a refusing answer's body kept with the outcome (what the service said). */
const BODY_SNIPPET = 200;

/**
 * POSTs one notification. Never throws: every way it can go wrong is an outcome whose text is
 * safe to store and show — the URL (a Slack or Discord webhook URL is a credential) and the auth
 * header's value are cut out of anything the other side or the network stack says. Redirects
 * are not followed: a custom auth header would go along to wherever they point.
 */
export async function sendWebhook(
  url: string,
  request: WebhookRequest,
  auth: AuthHeader | null,
  timeoutMs: number = DEFAULT_DELIVERY_TIMEOUT_MS,
): Promise<SendOutcome> {
  const secrets = [url, new URL(url).pathname + new URL(url).search, auth?.value ?? ""];
  const redact = (text: string) => redactSecrets(text, secrets);
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: { ...request.headers, ...(auth ? { [auth.name]: auth.value } : {}) },
      body: request.body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    const answer = await response.text().catch(() => "");
    if (response.status >= 200 && response.status < 300) {
      return { ok: true, status: response.status };
    }
    const said = answer.trim() ? `: ${redact(answer.trim().slice(0, BODY_SNIPPET))}` : "";
    const what =
      response.status >= 300 && response.status < 400
        ? `answered a redirect (HTTP ${response.status}); a webhook is not followed elsewhere, enter the final URL`
        : `answered HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`;
    return { ok: false, status: response.status, error: `${what}${said}` };
  } catch (error) {
    return { ok: false, status: null, error: redact(describeFetchError(error, timeoutMs)) };
  }
}

function describeFetchError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) {
    return `no answer within ${timeoutMs / 1000} s (timed out)`;
  }
  const cause =
    error instanceof Error ? (error.cause as { code?: string; message?: string }) : null;
  if (cause?.code)
    return `could not reach it (${cause.code}${cause.message ? `: ${cause.message}` : ""})`;
  return `could not reach it (${error instanceof Error ? error.message : String(error)})`;
}

export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.replaceAll(secret, "[redacted]");
  }
  return out;
}
