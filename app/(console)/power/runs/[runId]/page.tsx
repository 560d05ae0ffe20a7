import type { Metadata } from "next";
import Link from "next/link";
import { notFound } from "next/navigation";
import { z } from "zod";
import { RunTimelineView } from "@/components/power/timeline";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { runTimeline } from "@/lib/power/queries/timeline";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power run timeline" };

/** One power run's timeline, live while it runs and kept afterwards. */
export default async function PowerRunPage({ params }: { params: Promise<{ runId: string }> }) {
  const { runId } = await params;
  await requirePageActor("viewer", `/power/runs/${encodeURIComponent(runId)}`);
  if (!z.uuid().safeParse(runId).success) notFound();
  const timeline = await runTimeline(getDb(), runId);
  if (!timeline) notFound();
  return (
    <>
      <p className="muted small">
        <Link href="/power">Power</Link> / <Link href="/power/runs">Runs and drills</Link> / run
      </p>
      <div className="page-head">
        <h1>Run timeline</h1>
      </div>
      <section className="panel" aria-labelledby="timeline-heading">
        <h2 id="timeline-heading">Timeline</h2>
        <RunTimelineView initial={timeline} />
      </section>
    </>
  );
}
