import { advance, type Outcome, type StepContext } from "@/lib/pipeline/step";

export const ALREADY_IN_PLACE = "already in place";

/**
 * The outcome of a visit that found its goal holding and touched nothing on the host. Said in
 * the run log and on the timeline in the same words by every step, so a re-onboarding of a
 * healthy host reads as what it is: a run that changed nothing (docs/pipeline.md, "Onboarding").
 */
export function alreadyInPlace(ctx: Pick<StepContext<unknown>, "log">, what: string): Outcome {
  const line = `${ALREADY_IN_PLACE}: ${what}`;
  ctx.log(line);
  return advance(line);
}
