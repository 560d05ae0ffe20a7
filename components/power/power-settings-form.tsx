"use client";

import { updatePowerSettingsAction } from "@/lib/actions/power/update-power-settings";
import type { PowerSettings } from "@/lib/power/config/settings";
import { SubmitActions } from "../action-form";
import { Field, TextField } from "../form-fields";
import { ConfigOutcome, useConfigForm } from "./config-form";

const FIELDS = [
  "triggers.lowBattery",
  "triggers.runtimeBelowSeconds",
  "triggers.chargeBelowPercent",
  "triggers.onBatteryForSeconds",
  "triggers.latchReleaseAfterStableMainsSeconds",
  "triggers.unreachableShutdownAfterSeconds",
  "triggers.confirmSeconds",
  "triggers.forcedShutdownAlone",
  "pollIntervalMs",
  "shutdown.callTimeoutSeconds",
  "shutdown.targetDownSeconds",
  "shutdown.guestTimeoutSeconds",
  "shutdown.guestParallelism",
  "shutdown.consoleGuest.node",
  "shutdown.consoleGuest.vmid",
  "powerBack.mainsStableMinutes",
  "powerBack.minChargePercent",
  "shed.enabled",
  "shed.afterMinutes",
  "shed.tag",
  "shed.guests",
] as const;

const text = (value: number | null) => (value === null ? "" : String(value));

/**
 * The global trigger defaults (each UPS may override them), how often the monitor polls, and the
 * shutdown's deadlines. An empty threshold is off. While armed, a change that alters the plan
 * is shown before it is saved.
 */
export function PowerSettingsForm({ settings }: { settings: PowerSettings }) {
  const { state, pending, errorOf, formProps, formError, confirmation, confirmable } =
    useConfigForm(updatePowerSettingsAction, FIELDS);
  const { triggers, shutdown } = settings;
  return (
    <form {...formProps} data-testid="power-settings-form">
      {formError}
      {confirmation}
      <fieldset>
        <legend>Triggers (only while on battery; the first that fires shuts down)</legend>
        <Field
          name="triggers.lowBattery"
          label="The UPS reports low battery (NUT LB, or FSD on battery; SNMP batteryLow/Depleted)"
          error={errorOf("triggers.lowBattery")}
        >
          {(props) => (
            <select {...props} className="control" defaultValue={String(triggers.lowBattery)}>
              <option value="true">fires</option>
              <option value="false">off</option>
            </select>
          )}
        </Field>
        <TextField
          name="triggers.runtimeBelowSeconds"
          label="Runtime left below (seconds)"
          hint="Empty: off."
          inputMode="numeric"
          defaultValue={text(triggers.runtimeBelowSeconds)}
          error={errorOf("triggers.runtimeBelowSeconds")}
        />
        <TextField
          name="triggers.chargeBelowPercent"
          label="Charge below (%)"
          hint="Empty: off."
          inputMode="numeric"
          defaultValue={text(triggers.chargeBelowPercent)}
          error={errorOf("triggers.chargeBelowPercent")}
        />
        <TextField
          name="triggers.onBatteryForSeconds"
          label="On battery for (seconds, by the console's own clock)"
          hint="Counted from the moment the console saw mains fail; the UPS's own counter is never trusted. Empty: off."
          inputMode="numeric"
          defaultValue={text(triggers.onBatteryForSeconds)}
          error={errorOf("triggers.onBatteryForSeconds")}
        />
        <TextField
          name="triggers.latchReleaseAfterStableMainsSeconds"
          label="A fired trigger is released after stable mains for (seconds)"
          inputMode="numeric"
          defaultValue={String(triggers.latchReleaseAfterStableMainsSeconds)}
          error={errorOf("triggers.latchReleaseAfterStableMainsSeconds")}
        />
        <TextField
          name="triggers.unreachableShutdownAfterSeconds"
          label="Opt-in: shut down after losing contact for (seconds), when last seen on battery"
          hint="A UPS that stops answering raises an alarm; it shuts nothing down unless you set this. Empty: off."
          inputMode="numeric"
          defaultValue={text(triggers.unreachableShutdownAfterSeconds)}
          error={errorOf("triggers.unreachableShutdownAfterSeconds")}
        />
        <TextField
          name="triggers.confirmSeconds"
          label="A trigger must hold for (seconds) before it fires"
          hint="A blip is not an outage: the row must go on firing this long (the UPS's own low battery: two readings in a row), also again after mains came back. 0: fire on the first reading."
          inputMode="numeric"
          defaultValue={String(triggers.confirmSeconds)}
          error={errorOf("triggers.confirmSeconds")}
        />
        <Field
          name="triggers.forcedShutdownAlone"
          label="NUT's FSD while the UPS is on line"
          error={errorOf("triggers.forcedShutdownAlone")}
        >
          {(props) => (
            <select
              {...props}
              className="control"
              defaultValue={String(triggers.forcedShutdownAlone)}
            >
              <option value="false">ignored (FSD counts only with on battery)</option>
              <option value="true">fires (an upsmon -c fsd shuts the fleet down)</option>
            </select>
          )}
        </Field>
      </fieldset>
      <fieldset>
        <legend>Monitor and shutdown</legend>
        <TextField
          name="pollIntervalMs"
          label="Poll every (milliseconds)"
          hint="One small request per UPS per interval, on mains and on battery alike."
          inputMode="numeric"
          defaultValue={String(settings.pollIntervalMs)}
          error={errorOf("pollIntervalMs")}
        />
        <TextField
          name="shutdown.callTimeoutSeconds"
          label="Deadline of one shutdown call (seconds)"
          inputMode="numeric"
          defaultValue={String(shutdown.callTimeoutSeconds)}
          error={errorOf("shutdown.callTimeoutSeconds")}
        />
        <TextField
          name="shutdown.targetDownSeconds"
          label="Time a target may take to go down after its call (seconds)"
          inputMode="numeric"
          defaultValue={String(shutdown.targetDownSeconds)}
          error={errorOf("shutdown.targetDownSeconds")}
        />
        <TextField
          name="shutdown.guestTimeoutSeconds"
          label="A cluster guest's clean shutdown may take (seconds), then it is force-stopped"
          inputMode="numeric"
          defaultValue={String(shutdown.guestTimeoutSeconds)}
          error={errorOf("shutdown.guestTimeoutSeconds")}
        />
        <TextField
          name="shutdown.guestParallelism"
          label="Cluster guests shut down (or migrated) at once"
          inputMode="numeric"
          defaultValue={String(shutdown.guestParallelism)}
          error={errorOf("shutdown.guestParallelism")}
        />
      </fieldset>
      <fieldset data-testid="console-guest-fields">
        <legend>The console&apos;s own guest</legend>
        <p className="muted small">
          If this console runs in a VM or container of a cluster it protects, name it here: the
          cluster sequence never stops it, its node goes down last, and a consolidating cluster
          keeps that node up. Leave both empty when the console runs elsewhere.
        </p>
        <TextField
          name="shutdown.consoleGuest.node"
          label="Node it runs on"
          hint="The Proxmox node name as the cluster spells it, e.g. pve3."
          autoComplete="off"
          defaultValue={shutdown.consoleGuest?.node ?? ""}
          error={errorOf("shutdown.consoleGuest.node")}
        />
        <TextField
          name="shutdown.consoleGuest.vmid"
          label="Its VMID"
          inputMode="numeric"
          defaultValue={shutdown.consoleGuest ? String(shutdown.consoleGuest.vmid) : ""}
          error={errorOf("shutdown.consoleGuest.vmid")}
        />
      </fieldset>
      <fieldset data-testid="power-back-fields">
        <legend>Power back</legend>
        <p className="muted small">
          When the way back starts by itself: mains back on every feed of the hosts that went down
          for this long, each feed charged this far, and runtime enough for the shutdown again.
        </p>
        <TextField
          name="powerBack.mainsStableMinutes"
          label="Mains back without a break for (minutes)"
          inputMode="numeric"
          defaultValue={String(settings.powerBack.mainsStableMinutes)}
          error={errorOf("powerBack.mainsStableMinutes")}
        />
        <TextField
          name="powerBack.minChargePercent"
          label="Every feed charged to at least (%)"
          inputMode="numeric"
          defaultValue={String(settings.powerBack.minChargePercent)}
          error={errorOf("powerBack.minChargePercent")}
        />
      </fieldset>
      <fieldset data-testid="shed-fields">
        <legend>Early shedding</legend>
        <p className="muted small">
          Guests you mark as <em>shed</em> — by a Proxmox tag on the guest, or listed here — are
          shut down once their hosts&apos; UPS has been on battery this long, to stretch the runtime
          for the rest; the main trigger still shuts everything down. They start again when mains
          returns before the main trigger, else with the way back. HA-managed guests are never shed
          (the run says so). Off until you turn it on: nothing is shut down early unless you chose
          it.
        </p>
        <Field name="shed.enabled" label="Early shedding" error={errorOf("shed.enabled")}>
          {(props) => (
            <select {...props} className="control" defaultValue={String(settings.shed.enabled)}>
              <option value="false">off</option>
              <option value="true">on: shut the shed guests down early</option>
            </select>
          )}
        </Field>
        <TextField
          name="shed.afterMinutes"
          label="Shed after on battery for (minutes, by the console's own clock)"
          hint="A blip shorter than this sheds nothing."
          inputMode="numeric"
          defaultValue={String(settings.shed.afterMinutes)}
          error={errorOf("shed.afterMinutes")}
        />
        <TextField
          name="shed.tag"
          label="Proxmox tag that marks a guest as shed"
          hint="Set it on the guest in Proxmox (Tags), e.g. shed."
          autoComplete="off"
          defaultValue={settings.shed.tag}
          error={errorOf("shed.tag")}
        />
        <TextField
          name="shed.guests"
          label="Also shed these guests (node/VMID, comma-separated)"
          hint="E.g. pve1/105, pve2/110. Empty: only the tagged guests."
          autoComplete="off"
          defaultValue={settings.shed.guests.map((g) => `${g.node}/${g.vmid}`).join(", ")}
          error={errorOf("shed.guests")}
        />
      </fieldset>
      <ConfigOutcome state={state} confirmable={confirmable} pending={pending} savedText="Saved." />
      <SubmitActions
        pending={pending}
        label="Save settings"
        pendingLabel="Saving…"
        testId="save-power-settings"
      />
    </form>
  );
}
