import type { Metadata } from "next";
import { PowerSettingsForm } from "@/components/power/power-settings-form";
import { requirePageActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";
import { readPowerSettings } from "@/lib/power/config/power-settings-store";

export const dynamic = "force-dynamic";

export const metadata: Metadata = { title: "Power settings" };

export default async function PowerSettingsPage() {
  await requirePageActor("admin", "/power/settings");
  const { mode, triggers, pollIntervalMs, shutdown, powerBack, shed } =
    await readPowerSettings(getDb());
  return (
    <>
      <h1>Triggers and deadlines</h1>
      <p className="lead">
        The defaults every UPS follows unless it overrides them, how often the console asks each
        UPS, and how long the shutdown may take per call.
      </p>
      <PowerSettingsForm settings={{ mode, triggers, pollIntervalMs, shutdown, powerBack, shed }} />
    </>
  );
}
