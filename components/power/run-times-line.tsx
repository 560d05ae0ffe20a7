"use client";

import Link from "next/link";
import { formatDateTime } from "../format";
import { describeOrigin } from "./timeline";

/**
 * A power run's origin, start, end and a link to its timeline, in one muted line: the same under
 * the latest shutdown and the latest way back.
 */
export function RunTimesLine({
  run,
  origin,
  originTestId,
  timelineTestId,
}: {
  run: { id: string; createdAt: string; finishedAt: string | null };
  origin: Parameters<typeof describeOrigin>[0];
  originTestId: string;
  timelineTestId?: string;
}) {
  return (
    <p className="muted small">
      <span data-testid={originTestId}>{describeOrigin(origin)}</span>
      {" · "}
      Started{" "}
      <time dateTime={run.createdAt} suppressHydrationWarning>
        {formatDateTime(run.createdAt)}
      </time>
      {run.finishedAt && (
        <>
          {" · finished "}
          <time dateTime={run.finishedAt} suppressHydrationWarning>
            {formatDateTime(run.finishedAt)}
          </time>
        </>
      )}
      {" · "}
      <Link href={`/power/runs?run=${run.id}`} data-testid={timelineTestId}>
        its timeline
      </Link>
    </p>
  );
}
