import type { Metadata } from "next";
import Link from "next/link";
import { DeleteConfigButton } from "@/components/power/delete-config-button";
import styles from "@/components/power/power.module.css";
import { UpsForm } from "@/components/power/ups-form";
import { triggerSummary } from "@/components/power/ups-card-text";
import { deleteUpsDeviceAction } from "@/lib/actions/power/delete-ups-device";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";
import { effectiveTriggers } from "@/lib/power/config/settings";
import { listUpsDevices } from "@/lib/power/operations/ups-devices";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "UPS devices" };

type SearchParams = Promise<Record<string, string | string[] | undefined>>;

/** The UPS devices the console watches: list, add, and edit one (`?edit=<id>`). */
export default async function PowerUpsPage({ searchParams }: { searchParams: SearchParams }) {
  await requirePageActor("admin", "/power/ups");
  const db = getDb();
  const [devices, settings] = await Promise.all([listUpsDevices(db), readPowerSettings(db)]);
  const editId = (await searchParams).edit;
  const editing = devices.find((ups) => ups.id === editId) ?? null;
  return (
    <>
      <h1>UPS devices</h1>
      <p className="lead">
        Each UPS is read every {settings.pollIntervalMs / 1000} s over one persistent connection.
        Its password, community or keys are sealed and never shown again.
      </p>
      {devices.length === 0 ? (
        <p className="muted" data-testid="ups-none">
          No UPS yet.
        </p>
      ) : (
        <table className={styles.table} data-testid="ups-list">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Source</th>
              <th scope="col">Fires at</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {devices.map((ups) => (
              <tr key={ups.id} data-testid={`ups-row-${ups.name}`}>
                <th scope="row">{ups.name}</th>
                <td>
                  <span className="mono">{ups.sourceLabel}</span>
                  <div className="muted small">
                    {ups.hasSecret ? "credentials stored" : "no credentials"}
                  </div>
                </td>
                <td className="small">
                  {triggerSummary(effectiveTriggers(settings.triggers, ups.triggerOverrides))}
                </td>
                <td>
                  <div className={styles.inlineActions}>
                    <Link href={`/power/ups?edit=${ups.id}`} className="button">
                      Edit
                    </Link>
                    <DeleteConfigButton
                      id={ups.id}
                      name={ups.name}
                      what="UPS"
                      consequence={`The console stops watching ${ups.name}; its readings and events go with it. Refused while it still feeds a target.`}
                      action={deleteUpsDeviceAction}
                      testId={`remove-ups-${ups.name}`}
                    />
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <section className="panel" aria-labelledby="ups-form-heading">
        <h2 id="ups-form-heading">{editing ? `Edit ${editing.name}` : "Add a UPS"}</h2>
        <UpsForm key={editing?.id ?? "new"} ups={editing} defaults={settings.triggers} />
      </section>
    </>
  );
}
