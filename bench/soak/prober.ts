import type { ApiClient } from "./api";

/** Longest the console may go without answering (issue 18). */
export const MAX_SILENCE_MS = 15_000;
/** How long the prober waits for one answer (its ApiClient's timeout). */
export const PROBE_TIMEOUT_MS = 5_000;

export type Silence = { fromMs: number; toMs: number };

export type ProbeReport = {
  probes: number;
  /** 200: the API answered normally; 503: it said the database is away, as it should. */
  answered: number;
  unavailable503: number;
  /** Anything else (a 500, a 502 …): an answer, but not one the console should give. */
  unexpected: Map<string, number>;
  /** Probes without an answer (refused, reset, timed out). */
  silent: number;
  longestSilenceMs: number;
  /** Every stretch longer than MAX_SILENCE_MS, relative to the soak's start. */
  tooLong: Silence[];
};

/**
 * Asks the API once a second (GET /api/hosts?limit=1 with the operator's token) for the whole
 * soak and measures the longest stretch without an answer. A 503 counts as an answer: the web
 * server is up and says the database is away, which is what it should say while it is.
 */
export function startProber(api: ApiClient, startedAt: number) {
  const report: ProbeReport = {
    probes: 0,
    answered: 0,
    unavailable503: 0,
    unexpected: new Map(),
    silent: 0,
    longestSilenceMs: 0,
    tooLong: [],
  };
  let lastAnswerAt = Date.now();
  let stopped = false;
  let inFlight: Promise<void> | null = null;

  const answered = (at: number) => {
    const silence = at - lastAnswerAt;
    report.longestSilenceMs = Math.max(report.longestSilenceMs, silence);
    if (silence > MAX_SILENCE_MS) {
      report.tooLong.push({ fromMs: lastAnswerAt - startedAt, toMs: at - startedAt });
    }
    lastAnswerAt = at;
  };

  const probe = async () => {
    report.probes += 1;
    const answer = await api.request("GET", "/api/hosts?limit=1", undefined);
    const at = Date.now();
    if (answer.status === null) {
      report.silent += 1;
      return;
    }
    if (answer.status === 200) report.answered += 1;
    else if (answer.status === 503) report.unavailable503 += 1;
    else {
      const key = String(answer.status);
      report.unexpected.set(key, (report.unexpected.get(key) ?? 0) + 1);
    }
    answered(at);
  };

  const timer = setInterval(() => {
    // One probe at a time: a hanging console is one silence, not a pile of requests.
    if (stopped || inFlight) return;
    inFlight = probe().finally(() => (inFlight = null));
  }, 1000);

  return {
    report,
    /** Stops probing; a silence still going on counts up to now. */
    async stop(): Promise<ProbeReport> {
      stopped = true;
      clearInterval(timer);
      await inFlight;
      const silence = Date.now() - lastAnswerAt;
      if (silence > MAX_SILENCE_MS) {
        report.tooLong.push({ fromMs: lastAnswerAt - startedAt, toMs: Date.now() - startedAt });
      }
      report.longestSilenceMs = Math.max(report.longestSilenceMs, silence);
      return report;
    },
  };
}
