/** Pure wording of the catalog pages, shared by server and client components (tested beside). */

/**
 * What publishing a draft would change, decided on the server by requiredTemplateVmids's own
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

type VersionShape = {
  cores: number;
  memoryMib: number;
  diskGib: number;
  saleStartsAt: string | null;
  saleEndsAt: string | null;
};

/**
 * A catalog instant, in UTC as the version form takes it: `2026-12-01 10:00 UTC`. The same text
 * on the server and in the browser, whatever either's time zone.
 */
export function formatUtc(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const utc = date.toISOString();
  return `${utc.slice(0, 10)} ${utc.slice(11, 16)} UTC`;
}

/** `2 cores · 2 GiB RAM · 40 GiB disk` (memory in MiB when not whole GiB). */
export function formatSize(version: Pick<VersionShape, "cores" | "memoryMib" | "diskGib">): string {
  const memory =
    version.memoryMib % 1024 === 0 ? `${version.memoryMib / 1024} GiB` : `${version.memoryMib} MiB`;
  const cores = `${version.cores} ${version.cores === 1 ? "core" : "cores"}`;
  return `${cores} · ${memory} RAM · ${version.diskGib} GiB disk`;
}

/** The sale window as entered; whether it has ended is requiredTemplateVmids's call, not this. */
export function formatSaleWindow(
  version: Pick<VersionShape, "saleStartsAt" | "saleEndsAt">,
): string {
  const { saleStartsAt: start, saleEndsAt: end } = version;
  if (start && end) return `${formatUtc(start)} – ${formatUtc(end)}`;
  if (start) return `from ${formatUtc(start)}, open-ended`;
  if (end) return `until ${formatUtc(end)}`;
  return "open (no dates)";
}

/** Exactly what the operator is about to cause by publishing, in the confirmation's words. */
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
      return `The sale window of ${label} ended${version.saleEndsAt ? ` ${formatUtc(version.saleEndsAt)}` : ""}. Publishing records it as published, but it requires no template on any host and is not on sale.`;
  }
}
