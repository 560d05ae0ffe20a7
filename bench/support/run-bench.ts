/**
 * How every bench starts and ends. `runBench(main)` runs the bench; whatever way it ends — main
 * returns or throws, Ctrl-C (SIGINT), SIGTERM, SIGHUP, an uncaught error, its launcher killed —
 * everything registered with `stopAtEnd`/`startUntilEnd` is stopped, newest first, before the
 * process exits. Benches start servers, Postgres (pg_ctl puts it in its own session) and workers
 * that outlive a bench process that simply dies, so nothing may be started unregistered.
 */

/** The bench cannot run as things are; the message says what to do. Printed without a stack. */
export class BenchCannotRun extends Error {}

type Stopper = { label: string; stop: () => Promise<unknown> };

/** Longest wait for one stopper; a stuck one is reported and the others still run. */
const STOP_TIMEOUT_MS = 90_000;
const SIGNAL_CODES = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 } as const;

const stoppers: Stopper[] = [];
let endedAt: number | null = null;
let stopping = "";

/**
 * Registers `stop` to run when the bench ends. Returns a function that unregisters it, for
 * what the bench stops itself on the way (then it must not be stopped twice).
 */
export function stopAtEnd(label: string, stop: () => unknown): () => void {
  const stopper: Stopper = { label, stop: async () => stop() };
  stoppers.push(stopper);
  return () => {
    const at = stoppers.indexOf(stopper);
    if (at >= 0) stoppers.splice(at, 1);
  };
}

/**
 * Registers the stop of something still starting, before it has started: an interruption
 * while it starts waits for it and then stops it, instead of leaving it running.
 */
export function startUntilEnd<T>(
  label: string,
  starting: Promise<T>,
  stop: (started: T) => unknown,
): Promise<T> {
  stopAtEnd(label, async () => {
    const outcome = await starting.then(
      (started) => ({ started }),
      () => null, // it did not start: nothing to stop, and main reports the error
    );
    if (outcome) await stop(outcome.started);
  });
  return starting;
}

/** Runs the bench, then stops what it registered and exits (0, 1 on error, 128+n on a signal). */
export function runBench(main: () => Promise<void>): void {
  for (const signal of Object.keys(SIGNAL_CODES) as (keyof typeof SIGNAL_CODES)[]) {
    process.on(signal, () => {
      if (endedAt === null) {
        void end(SIGNAL_CODES[signal], `bench: ${signal}: stopping what the bench started`);
      } else if (Date.now() - endedAt > 1000) {
        // (npm forwards the terminal's Ctrl-C too: a second signal at once is not the user's.)
        console.error(`bench: ${signal}: still stopping ${stopping || "…"}, please wait`);
      }
    });
  }
  // Once ending, whatever was in flight fails as its servers go away, or completes: neither is
  // the bench's result any more (end() ignores them).
  const failed = (error: unknown) => void end(1, describe(error));
  process.on("uncaughtException", failed);
  process.on("unhandledRejection", failed);
  // A bench whose launcher is gone (killed, or a wrapper that does not pass signals on) has
  // nobody left to report to: it stops as if the terminal had hung up.
  const launcher = process.ppid;
  setInterval(() => {
    if (process.ppid !== launcher) {
      void end(SIGNAL_CODES.SIGHUP, "bench: its launcher is gone: stopping what the bench started");
    }
  }, 500).unref();
  main().then(() => void end(Number(process.exitCode ?? 0)), failed);
}

function describe(error: unknown): string {
  if (error instanceof BenchCannotRun) return `bench: ${error.message}`;
  if (error instanceof Error) return `bench failed: ${error.stack ?? error.message}`;
  return `bench failed: ${String(error)}`;
}

/** Stops everything registered, then exits; only the first call does anything. */
async function end(code: number, message?: string): Promise<void> {
  if (endedAt !== null) return;
  endedAt = Date.now();
  if (message) console.error(message);
  let left = false;
  // Newest first: the browser before the web server before Postgres before its folder.
  for (let stopper = stoppers.pop(); stopper; stopper = stoppers.pop()) {
    stopping = stopper.label;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      stopper.stop().then(
        () => "stopped",
        (error: unknown) => `could not be stopped: ${(error as Error).message ?? String(error)}`,
      ),
      new Promise<string>((resolve) => {
        timer = setTimeout(
          () => resolve(`did not stop within ${STOP_TIMEOUT_MS / 1000} s`),
          STOP_TIMEOUT_MS,
        );
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== "stopped") {
      left = true;
      console.error(`bench: ${stopper.label} ${outcome}: it may still be running`);
    }
  }
  process.exit(code === 0 && left ? 1 : code);
}
