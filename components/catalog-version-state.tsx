"use client";

import { useEffect, useRef, useState, useTransition } from "react";
import { publishPlanVersionAction } from "@/lib/actions/publish-plan-version";
import { ConfirmDialog } from "./confirm-dialog";

/**
 * What publishing this draft would change, decided on the server by requiredTemplateVmids's own
 * window function (never re-derived here):
 * - "requires":         its template becomes required on every host
 * - "already-required": another published version on sale already requires the same template
 * - "window-ended":     its sale window is over, so publishing requires nothing
 */
export type PublishEffect = "requires" | "already-required" | "window-ended";

export type VersionForPublish = {
  id: string;
  version: number;
  templateVmid: number;
  publishedAt: string | null;
  saleEndsAt: string | null;
};

/** A version's state cell: "Published <when>", or "Draft" with a Publish button (confirmed). */
export function CatalogVersionState({
  planSlug,
  version,
  effect,
}: {
  planSlug: string;
  version: VersionForPublish;
  effect: PublishEffect;
}) {
  const [confirming, setConfirming] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const [justPublished, setJustPublished] = useState(false);
  const publishedRef = useRef<HTMLSpanElement>(null);

  // The Publish button (the dialog's opener) is gone once the version is published: keep the
  // focus in this row instead of letting it fall back to the page.
  useEffect(() => {
    if (justPublished && version.publishedAt) publishedRef.current?.focus();
  }, [justPublished, version.publishedAt]);

  const label = `v${version.version} of ${planSlug}`;
  const publish = () =>
    startTransition(async () => {
      setError(null);
      const result = await publishPlanVersionAction({ planVersionId: version.id });
      if (result.ok) {
        setConfirming(false);
        setJustPublished(true);
      } else {
        setError(result.message);
      }
    });

  if (version.publishedAt) {
    return (
      <span
        ref={publishedRef}
        tabIndex={-1}
        className="badge badge-active"
        data-testid="version-state"
        data-state="published"
      >
        <span aria-hidden="true">✓</span> Published {formatUtc(version.publishedAt)}
      </span>
    );
  }

  return (
    <div className="catalog-version-state">
      <span className="badge badge-draft" data-testid="version-state" data-state="draft">
        <span aria-hidden="true">✎</span> Draft
      </span>
      <button
        type="button"
        className="button"
        onClick={() => {
          setError(null);
          setConfirming(true);
        }}
        disabled={pending}
        aria-label={`Publish ${label}`}
        data-testid="publish-button"
      >
        Publish
      </button>
      <ConfirmDialog
        open={confirming}
        title={`Publish ${label}`}
        confirmLabel={`Publish v${version.version}`}
        pending={pending}
        error={error}
        onConfirm={publish}
        onCancel={() => setConfirming(false)}
        testId="publish-dialog"
      >
        <p data-testid="publish-consequence">{publishConsequence(planSlug, version, effect)}</p>
        <p>A published version cannot be unpublished.</p>
      </ConfirmDialog>
    </div>
  );
}

/** Exactly what the operator is about to cause, in one sentence. */
export function publishConsequence(
  planSlug: string,
  version: VersionForPublish,
  effect: PublishEffect,
): string {
  const label = `v${version.version} of ${planSlug}`;
  const vmid = version.templateVmid;
  switch (effect) {
    case "requires":
      return `Publishing ${label} makes template VMID ${vmid} required on every host; hosts without it will build it during onboarding and fail the pre-sale check until they have it.`;
    case "already-required":
      return `Publishing ${label} puts it on sale. Template VMID ${vmid} is required on every host already (another published version uses it), so no host is affected.`;
    case "window-ended":
      return `The sale window of ${label} ended ${version.saleEndsAt ? formatUtc(version.saleEndsAt) : ""}. Publishing records it as published, but it requires no template on any host and is not on sale.`;
  }
}

/**
 * A catalog instant, in UTC like the version form takes it: `2026-12-01 10:00 UTC`. Rendered on
 * the server and in the browser alike (no time-zone dependent hydration mismatch).
 */
export function formatUtc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}
