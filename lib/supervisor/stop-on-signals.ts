const STOP_SIGNALS = {
  SIGINT: "Ctrl-C",
  SIGTERM: "SIGTERM",
  // The children run in their own process groups and would not notice a closed terminal.
  SIGHUP: "the terminal closed (SIGHUP)",
} as const;

/**
 * The only way supervision ends: Ctrl-C, SIGTERM or SIGHUP calls `stop` once, with the reason
 * in words; signals while it is stopping are ignored, so a second Ctrl-C does not cut the
 * ordered shutdown short.
 */
export function stopOnSignals(stop: (why: string) => void): void {
  let stopping = false;
  for (const [signal, why] of Object.entries(STOP_SIGNALS)) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      stop(why);
    });
  }
}
