import Link from "next/link";
import type { CatalogView } from "@/lib/catalog/manage-catalog";
import type { RequiredTemplates } from "@/lib/catalog/required-template-vmids";
import { IfCan } from "./actor-context";
import { formatSaleWindow, formatSize, type PublishEffect } from "./catalog-format";
import { CatalogVersionState } from "./catalog-version-state";

type Plan = CatalogView[number];

/**
 * What the catalog requires of every host right now (requiredTemplateVmids), with the versions
 * that name each template.
 */
export function CatalogRequiredTemplates({
  required,
  plans,
}: {
  required: RequiredTemplates;
  plans: CatalogView;
}) {
  const usedBy = (vmid: number) =>
    plans.flatMap((plan) =>
      plan.versions
        .filter((version) => version.templateVmid === vmid)
        .map((version) => ({ key: version.id, label: `${plan.slug} v${version.version}` })),
    );
  return (
    <section
      className="panel"
      aria-labelledby="required-templates-title"
      data-testid="required-templates"
    >
      <h2 id="required-templates-title">Required templates</h2>
      {!required.catalogPublished ? (
        <p className="muted" data-testid="required-none">
          Nothing is published yet, so no template is required: hosts onboard without building one.
        </p>
      ) : required.vmids.length === 0 ? (
        <p className="muted" data-testid="required-none">
          The sale windows of all published versions have ended: no template is required.
        </p>
      ) : (
        <>
          <p className="muted">
            Every host must carry these templates. Hosts without one build it during onboarding and
            fail the pre-sale check until they have it.
          </p>
          <ul className="required-vmids">
            {required.vmids.map((vmid) => (
              <li key={vmid} data-testid={`required-vmid-${vmid}`}>
                <span className="mono required-vmid">VMID {vmid}</span>{" "}
                <span className="muted small">
                  {usedBy(vmid)
                    .map((use) => use.label)
                    .join(", ")}
                </span>
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

/** One plan with its versions, newest first. */
export function CatalogPlan({
  plan,
  publishEffects,
}: {
  plan: Plan;
  /** For each draft's id: what publishing it would change (see PublishEffect). */
  publishEffects: Record<string, PublishEffect>;
}) {
  const titleId = `plan-${plan.slug}-title`;
  return (
    <section
      className="panel"
      id={`plan-${plan.slug}`}
      aria-labelledby={titleId}
      data-testid={`plan-${plan.slug}`}
    >
      <div className="panel-head">
        <h2 id={titleId}>
          {plan.name} <span className="mono muted catalog-slug">{plan.slug}</span>
        </h2>
        <IfCan role="admin">
          <Link
            href={`/catalog/plans/${plan.id}/versions/new`}
            className="button"
            aria-label={`Add a version to ${plan.slug}`}
            data-testid="add-version"
          >
            Add version
          </Link>
        </IfCan>
      </div>
      {plan.versions.length === 0 ? (
        <p className="muted">
          No versions yet: the plan sells nothing until a version is published.
        </p>
      ) : (
        <div className="table-scroll">
          <table className="catalog-table">
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Template VMID</th>
                <th scope="col">Size</th>
                <th scope="col">State</th>
                <th scope="col">Sale window</th>
              </tr>
            </thead>
            <tbody>
              {plan.versions.map((version) => (
                <tr key={version.id} data-testid={`version-${plan.slug}-v${version.version}`}>
                  <th scope="row">v{version.version}</th>
                  <td className="mono" data-testid="version-vmid">
                    {version.templateVmid}
                  </td>
                  <td>{formatSize(version)}</td>
                  <td>
                    <CatalogVersionState
                      planSlug={plan.slug}
                      version={version}
                      effect={publishEffects[version.id] ?? "requires"}
                    />
                  </td>
                  <td>{formatSaleWindow(version)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
