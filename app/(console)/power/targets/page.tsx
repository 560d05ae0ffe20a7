import type { Metadata } from "next";
import Link from "next/link";
import { DeleteConfigButton } from "@/components/power/delete-config-button";
import styles from "@/components/power/power.module.css";
import { TargetForm } from "@/components/power/target-form";
import { deletePowerTargetAction } from "@/lib/actions/power/delete-power-target";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { listPowerTargets } from "@/lib/power/operations/power-targets";
import { targetCandidates } from "@/lib/power/queries/target-candidates";
import { targetControllers, type TargetController } from "@/lib/power/queries/target-controllers";
import { CONTROLLER_WORDS } from "@/components/power/controller-words";
import { listUpsDevices } from "@/lib/power/operations/ups-devices";
import { PowerControllerPanel } from "@/components/power-controller-panel";
import { getTargetPowerControllerView } from "@/lib/power-controllers/store";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Protected targets" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

const POLICY = { any: "any feed fails", all: "all feeds fail" } as const;

/** What the console shuts down: list, protect another host or backup server, edit (`?edit=`). */
export default async function PowerTargetsPage({ searchParams }: { searchParams: SearchParams }) {
  await requirePageActor("admin", "/power/targets");
  const db = getDb();
  const [targets, candidates, devices, controllers] = await Promise.all([
    listPowerTargets(db),
    targetCandidates(db),
    listUpsDevices(db),
    targetControllers(db),
  ]);
  const editId = (await searchParams).edit;
  const editing = targets.find((target) => target.id === editId) ?? null;
  const ups = devices.map(({ id, name }) => ({ id, name }));
  // A backup server's controller is set in its edit form (it has no host page).
  const pbsController =
    editing?.kind === "pbs" ? await getTargetPowerControllerView(db, editing.id) : null;
  return (
    <>
      <h1>Protected targets</h1>
      <p className="lead">
        The hosts the console onboarded are the hosts it protects: it calls each node&apos;s own API
        with its own token. Stages go down in order; the host that runs the console goes last.
      </p>
      {targets.length === 0 ? (
        <p className="muted" data-testid="targets-none">
          Nothing is protected yet.
        </p>
      ) : (
        <table className={`${styles.table} stack-on-phone`} data-testid="target-list">
          <thead>
            <tr>
              <th scope="col">Target</th>
              <th scope="col">Fed by</th>
              <th scope="col">Stage</th>
              <th scope="col">Request</th>
              <th scope="col">Way back</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {targets.map((target) => (
              <tr key={target.id} data-testid={`target-row-${target.name}`}>
                <th scope="row">
                  {target.name}
                  <div className="muted small">
                    {target.kind === "pbs" ? "Proxmox Backup Server" : "Proxmox VE node"}
                    {target.runsConsole && " · runs the console"}
                    {!target.enabled && " · turned off"}
                  </div>
                </th>
                <td data-label="Fed by">
                  {target.feeds.map((feed) => feed.upsName).join(", ") || "—"}
                  <div className="muted small">down when {POLICY[target.feedPolicy]}</div>
                </td>
                <td data-label="Stage">{target.stage}</td>
                <td data-label="Request" className={styles.request}>
                  {target.request ?? `cannot be called: ${target.problem}`}
                </td>
                <td data-label="Way back">
                  <WayBack
                    controller={controllers.get(target.id)?.controller ?? null}
                    hostId={controllers.get(target.id)?.hostId ?? null}
                    editHref={target.kind === "pbs" ? `/power/targets?edit=${target.id}` : null}
                    testId={`target-controller-${target.name}`}
                  />
                </td>
                <td data-label="Actions">
                  <div className={styles.inlineActions}>
                    <Link href={`/power/targets?edit=${target.id}`} className="button">
                      Edit
                    </Link>
                    <DeleteConfigButton
                      id={target.id}
                      name={target.name}
                      what="target"
                      consequence={`${target.name} is no longer shut down when the power runs out. The host itself stays as it is.`}
                      action={deletePowerTargetAction}
                      testId={`remove-target-${target.name}`}
                    />
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <section className="panel" aria-labelledby="target-form-heading">
        <h2 id="target-form-heading">
          {editing ? `Edit ${editing.name}` : "Protect a host or a backup server"}
        </h2>
        <TargetForm key={editing?.id ?? "new"} target={editing} candidates={candidates} ups={ups} />
      </section>
      {editing?.kind === "pbs" && (
        <PowerControllerPanel
          key={`controller-${editing.id}`}
          whose={{ kind: "pbs", targetId: editing.id, name: editing.name }}
          initial={pbsController}
        />
      )}
    </>
  );
}

/**
 * How the way back powers the target on after an outage: its stored controller (the kind, and
 * where it is sent), or a warning that it will not come back on its own. The power state itself
 * is read on the host's page, on demand — never for a list.
 */
function WayBack({
  controller,
  hostId,
  editHref,
  testId,
}: {
  controller: TargetController;
  hostId: string | null;
  /** A backup server: its controller is set in its edit form. */
  editHref: string | null;
  testId: string;
}) {
  if (!controller) {
    return (
      <div className="field-error" data-testid={testId} data-controller="none">
        none: will not come back on its own
        <div className="small">
          {hostId ? (
            <>
              Set its power controller on <Link href={`/hosts/${hostId}`}>its host page</Link>, or
              power it on by hand after an outage.
            </>
          ) : editHref ? (
            <>
              Set its power controller under <Link href={editHref}>Edit</Link>, or power it on by
              hand after an outage.
            </>
          ) : (
            "Power it on by hand after an outage."
          )}
        </div>
      </div>
    );
  }
  return (
    <div data-testid={testId} data-controller={controller.kind}>
      {CONTROLLER_WORDS[controller.kind]}
      <div className={`muted small ${styles.request}`}>{controller.where}</div>
      {(hostId || editHref) && (
        <div className="small">
          <Link href={hostId ? `/hosts/${hostId}` : editHref!}>its power state</Link>
        </div>
      )}
    </div>
  );
}
