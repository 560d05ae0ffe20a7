"use client";

import { useEffect, useRef, useState, useTransition } from "react";
import { publishPlanVersionAction } from "@/lib/actions/publish-plan-version";
import {
  formatUtc,
  publishConsequence,
  type PublishEffect,
  type VersionForPublish,
} from "./catalog-format";
import { useCan } from "./actor-context";
import { ConfirmDialog } from "./confirm-dialog";

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
  const canPublish = useCan("admin");

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
      {canPublish && (
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
      )}
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
