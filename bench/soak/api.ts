import type { SecretWatch } from "./secrets";

/** What the console answered, or why there was no answer. */
export type ApiAnswer =
  { status: number; body: unknown; text: string } | { status: null; error: string };

/**
 * The soak's JSON API client: a bearer token, a timeout on every request (a console that
 * hangs is an answer too: none), and every answer searched for the soak's secrets on arrival.
 */
export class ApiClient {
  constructor(
    private readonly base: string,
    private readonly token: string,
    private readonly secrets: SecretWatch,
    private readonly timeoutMs = 15_000,
  ) {}

  async request(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, body?: unknown) {
    let response: Response;
    try {
      response = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { "content-type": "application/json" }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      return { status: null, error: describeFetchError(error) } satisfies ApiAnswer;
    }
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      return { status: null, error: `answer cut off: ${describeFetchError(error)}` } as ApiAnswer;
    }
    this.secrets.scan(`API answer ${method} ${path.split("?")[0]} (${response.status})`, text);
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // an HTML error page or an empty body: the text says what it was
    }
    return { status: response.status, body: parsed, text } as ApiAnswer;
  }

  get = (path: string) => this.insist("GET", path);
  post = (path: string, body: unknown = {}) => this.insist("POST", path, body);

  /**
   * As automation does with this console: while it answers 503 (its database is away) or the
   * connection is refused (its web server is restarting), ask again every second, for up to
   * `ms`. Nothing happened on either, so asking again is safe; a request that timed out is not
   * sent twice.
   */
  async insist(
    method: "GET" | "POST" | "PATCH" | "DELETE",
    path: string,
    body?: unknown,
    ms = 20_000,
  ): Promise<ApiAnswer> {
    const deadline = Date.now() + ms;
    for (;;) {
      const answer = await this.request(method, path, body);
      const again =
        answer.status === 503 || (answer.status === null && answer.error === "ECONNREFUSED");
      if (!again || Date.now() > deadline) return answer;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

function describeFetchError(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as Error & { cause?: { code?: string } }).cause;
    if (error.name === "TimeoutError") return "no answer within the timeout";
    return cause?.code ?? error.message;
  }
  return String(error);
}

/** Short words for an answer in the soak's log: `201`, `409 Only a running run…`, `ECONNREFUSED`. */
export function describeAnswer(answer: ApiAnswer): string {
  if (answer.status === null) return answer.error;
  const body = answer.body as { error?: string; message?: string } | null;
  const message = body?.message ?? body?.error;
  return message ? `${answer.status} ${String(message).slice(0, 120)}` : String(answer.status);
}
