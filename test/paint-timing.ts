import type { Page } from "playwright-core";

/**
 * When the hosts list's rows were painted, in ms from navigation start: the latest paint time
 * the browser recorded for a row's address cell (Element Timing API, `elementtiming="fleet-row"` in
 * components/fleet-table.tsx). Used by e2e/fleet.spec.ts and bench/fleet.ts, after the rows are
 * in the document; two frames first, so every row's paint is recorded. NaN when none was.
 */
export async function rowsPaintedAt(page: Pick<Page, "evaluate">): Promise<number> {
  return page.evaluate(async () => {
    for (let i = 0; i < 2; i++) await new Promise((resolve) => requestAnimationFrame(resolve));
    return await new Promise<number>((resolve) => {
      // No entry at all (the attribute gone, the API missing) must fail the measure, not hang.
      setTimeout(() => resolve(Number.NaN), 5_000);
      new PerformanceObserver((list, observer) => {
        observer.disconnect();
        resolve(
          Math.max(
            ...list
              .getEntries()
              .map(
                (e) => (e as PerformanceEntry & { renderTime: number }).renderTime || e.startTime,
              ),
          ),
        );
      }).observe({ type: "element", buffered: true });
    });
  });
}
