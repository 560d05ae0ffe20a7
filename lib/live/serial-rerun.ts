/**
 * Wraps `pass` so it never runs twice at once: a call while a pass is running asks for one more
 * pass right after it (however many calls came meanwhile), so nothing a caller announced is
 * missed and nothing piles up. `stopped` ends the loop (the stream closed). A pass that throws
 * ends the round; the next call starts a new one.
 */
export function serialRerun(
  pass: () => Promise<void>,
  stopped: () => boolean,
): () => Promise<void> {
  let running = false;
  let again = false;
  return async () => {
    if (running) {
      again = true;
      return;
    }
    running = true;
    try {
      do {
        again = false;
        await pass();
      } while (again && !stopped());
    } finally {
      running = false;
    }
  };
}
