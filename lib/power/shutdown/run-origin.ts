import { z } from "zod";
import { drillOf } from "./drill-mark";

/** What started a power-shutdown run, as its list and timeline say it. */
export type RunOrigin =
  | { kind: "drill"; by: string; live: boolean; upsName: string }
  | { kind: "outage"; upsName: string; trigger: string; reason: string }
  /** A run whose input this console version cannot read; shown, never guessed at. */
  | { kind: "unknown" };

const ZTrigger = z.object({
  trigger: z.object({ upsName: z.string(), trigger: z.string(), reason: z.string() }),
});

/** Reads a run's origin from its context (`input.trigger`, and `input.drill` for a drill). */
export function runOriginOf(context: Record<string, unknown>): RunOrigin {
  const input = context.input;
  const parsed = ZTrigger.safeParse(input);
  if (!parsed.success) return { kind: "unknown" };
  const { upsName, trigger, reason } = parsed.data.trigger;
  const drill = drillOf(input);
  if (drill) return { kind: "drill", by: drill.by, live: drill.live, upsName };
  return { kind: "outage", upsName, trigger, reason };
}
