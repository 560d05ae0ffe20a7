"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { createUpsDeviceAction } from "@/lib/actions/power/create-ups-device";
import { updateUpsDeviceAction } from "@/lib/actions/power/update-ups-device";
import type { TriggerOverrides, TriggerSettings } from "@/lib/power/config/settings";
import {
  ZSnmpAuthProtocol,
  ZSnmpPrivProtocol,
  type TSnmpSource,
  type TUpsSourceConfig,
} from "@/lib/power/ups/reading";
import type { UpsDeviceView } from "@/lib/power/operations/ups-devices";
import { SubmitActions } from "../action-form";
import { formatElapsed } from "../format";
import { Field, TextField } from "../form-fields";
import { ConfigOutcome, useConfigForm } from "./config-form";
import { OutputCycleField } from "./output-cycle-field";

/** Every SNMP version the schema takes, as the form names it (a new one fails to compile here). */
const SNMP_VERSION_LABELS: Record<TSnmpSource["version"], string> = {
  "1": "v1",
  "2c": "v2c",
  "3": "v3 (authPriv)",
};
// Oldest first: "1" < "2c" < "3" (object keys that look like numbers would come first).
const SNMP_VERSIONS = Object.entries(SNMP_VERSION_LABELS).sort(([a], [b]) => a.localeCompare(b));

const FIELDS = [
  "name",
  "source.type",
  "source.version",
  "source.host",
  "source.port",
  "source.upsName",
  "source.username",
  "source.password",
  "source.community",
  "source.user",
  "source.authProtocol",
  "source.authKey",
  "source.privProtocol",
  "source.privKey",
  "triggerOverrides.lowBattery",
  "triggerOverrides.runtimeBelowSeconds",
  "triggerOverrides.chargeBelowPercent",
  "triggerOverrides.onBatteryForSeconds",
  "triggerOverrides.latchReleaseAfterStableMainsSeconds",
  "triggerOverrides.unreachableShutdownAfterSeconds",
  "triggerOverrides.confirmSeconds",
  "triggerOverrides.forcedShutdownAlone",
  "outputCycle",
  "source",
] as const;

type Threshold = Exclude<keyof TriggerOverrides, "lowBattery" | "forcedShutdownAlone">;
const seconds = (value: number) => `${value} (${formatElapsed(value)})`;
const THRESHOLDS: [Threshold, string, (value: number) => string][] = [
  ["runtimeBelowSeconds", "Runtime left below (seconds)", seconds],
  ["chargeBelowPercent", "Charge below (%)", String],
  ["onBatteryForSeconds", "On battery for (seconds, console's clock)", seconds],
  ["latchReleaseAfterStableMainsSeconds", "Latch released after stable mains (seconds)", seconds],
  [
    "unreachableShutdownAfterSeconds",
    "Opt-in: shut down after lost contact on battery (seconds)",
    seconds,
  ],
  ["confirmSeconds", "A trigger must hold for (seconds) before it fires", seconds],
];

const overrideText = (value: number | null | undefined) =>
  value === undefined ? "" : value === null ? "off" : String(value);

/**
 * A UPS: its NUT or SNMP source (secrets are write-only: a stored one is never sent back, the
 * field says it is stored and stays empty) and its deviations from the global triggers.
 */
export function UpsForm({
  ups = null,
  defaults,
}: {
  ups?: UpsDeviceView | null;
  defaults: TriggerSettings;
}) {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError, confirmation, confirmable } =
    useConfigForm(ups ? updateUpsDeviceAction : createUpsDeviceAction, FIELDS);
  const source = ups?.source;
  const [type, setType] = useState<TUpsSourceConfig["type"]>(source?.type ?? "nut");
  const [version, setVersion] = useState<TSnmpSource["version"]>(
    source?.type === "snmp" ? source.version : "2c",
  );
  const stored = ups?.hasSecret ?? false;
  const secretHint = (what: string) =>
    stored ? `A ${what} is stored — leave empty to keep it.` : undefined;

  useEffect(() => {
    if (state?.ok && state.saved && !ups) router.push("/power/ups");
  }, [state, ups, router]);

  const valueOf = (key: string): string => {
    if (!source) return "";
    const value = (source as Record<string, unknown>)[key];
    return value === undefined || value === null ? "" : String(value);
  };

  return (
    <form {...formProps} data-testid="ups-form">
      {formError}
      {confirmation}
      {ups && <input type="hidden" name="id" value={ups.id} />}
      <TextField
        name="name"
        label="Name"
        defaultValue={ups?.name ?? ""}
        error={errorOf("name")}
        required
        autoComplete="off"
      />
      <Field name="source.type" label="Protocol" error={errorOf("source.type")}>
        {(props) => (
          <select
            {...props}
            className="control"
            value={type}
            onChange={(event) => setType(event.target.value as TUpsSourceConfig["type"])}
          >
            <option value="nut">NUT (a NUT server, upsd, TCP 3493)</option>
            <option value="snmp">SNMP (UPS-MIB, RFC 1628)</option>
          </select>
        )}
      </Field>
      {type === "snmp" && (
        <Field name="source.version" label="SNMP version" error={errorOf("source.version")}>
          {(props) => (
            <select
              {...props}
              className="control"
              value={version}
              onChange={(event) => setVersion(event.target.value as TSnmpSource["version"])}
            >
              {SNMP_VERSIONS.map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <TextField
        name="source.host"
        label={type === "nut" ? "NUT server address" : "SNMP agent address"}
        defaultValue={valueOf("host")}
        error={errorOf("source.host")}
        required
        autoComplete="off"
        spellCheck={false}
      />
      <TextField
        key={`port-${type}`}
        name="source.port"
        label="Port"
        inputMode="numeric"
        defaultValue={source?.type === type ? valueOf("port") : type === "nut" ? "3493" : "161"}
        error={errorOf("source.port")}
      />
      {type === "nut" ? (
        <>
          <TextField
            name="source.upsName"
            label="UPS name on that server"
            hint="As in upsc <name>@<server>."
            defaultValue={valueOf("upsName")}
            error={errorOf("source.upsName")}
            required
            autoComplete="off"
            spellCheck={false}
          />
          <TextField
            name="source.username"
            label="User (optional)"
            defaultValue={valueOf("username")}
            error={errorOf("source.username")}
            autoComplete="off"
          />
          <TextField
            name="source.password"
            type="password"
            label="Password (optional)"
            hint={secretHint("password")}
            error={errorOf("source.password")}
            autoComplete="new-password"
          />
        </>
      ) : version === "3" ? (
        <>
          <TextField
            name="source.user"
            label="SNMPv3 user"
            defaultValue={valueOf("user")}
            error={errorOf("source.user")}
            autoComplete="off"
          />
          <Field
            name="source.authProtocol"
            label="Authentication protocol"
            error={errorOf("source.authProtocol")}
          >
            {(props) => (
              <select
                {...props}
                className="control"
                defaultValue={valueOf("authProtocol") || "sha"}
              >
                {ZSnmpAuthProtocol.options.map((p) => (
                  <option key={p} value={p}>
                    {p.toUpperCase()}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <TextField
            name="source.authKey"
            type="password"
            label="Authentication key"
            hint={secretHint("key")}
            error={errorOf("source.authKey")}
            autoComplete="new-password"
          />
          <Field
            name="source.privProtocol"
            label="Privacy protocol"
            error={errorOf("source.privProtocol")}
          >
            {(props) => (
              <select
                {...props}
                className="control"
                defaultValue={valueOf("privProtocol") || "aes"}
              >
                {ZSnmpPrivProtocol.options.map((p) => (
                  <option key={p} value={p}>
                    {p.toUpperCase()}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <TextField
            name="source.privKey"
            type="password"
            label="Privacy key"
            hint={secretHint("key")}
            error={errorOf("source.privKey")}
            autoComplete="new-password"
          />
        </>
      ) : (
        <TextField
          name="source.community"
          type="password"
          label="Community"
          hint={secretHint("community")}
          error={errorOf("source.community")}
          autoComplete="new-password"
        />
      )}
      <fieldset>
        <legend>Triggers for this UPS</legend>
        <p className="muted small">
          Empty: the global default (shown). <span className="mono">off</span>: no such trigger for
          this UPS.
        </p>
        <Field
          name="triggerOverrides.lowBattery"
          label="The UPS reports low battery"
          error={errorOf("triggerOverrides.lowBattery")}
        >
          {(props) => (
            <select
              {...props}
              className="control"
              defaultValue={
                ups?.triggerOverrides.lowBattery === undefined
                  ? ""
                  : String(ups.triggerOverrides.lowBattery)
              }
            >
              <option value="">default ({defaults.lowBattery ? "fires" : "off"})</option>
              <option value="true">fires</option>
              <option value="false">off</option>
            </select>
          )}
        </Field>
        <Field
          name="triggerOverrides.forcedShutdownAlone"
          label="NUT's FSD while the UPS is on line"
          error={errorOf("triggerOverrides.forcedShutdownAlone")}
        >
          {(props) => (
            <select
              {...props}
              className="control"
              defaultValue={
                ups?.triggerOverrides.forcedShutdownAlone === undefined
                  ? ""
                  : String(ups.triggerOverrides.forcedShutdownAlone)
              }
            >
              <option value="">
                default ({defaults.forcedShutdownAlone ? "fires" : "ignored unless on battery"})
              </option>
              <option value="true">fires</option>
              <option value="false">ignored unless on battery</option>
            </select>
          )}
        </Field>
        {THRESHOLDS.map(([key, label, show]) => {
          const fallback = defaults[key];
          return (
            <TextField
              key={key}
              name={`triggerOverrides.${key}`}
              label={label}
              placeholder={fallback === null ? "default: off" : `default: ${show(fallback)}`}
              defaultValue={overrideText(ups?.triggerOverrides[key])}
              error={errorOf(`triggerOverrides.${key}`)}
              autoComplete="off"
            />
          );
        })}
      </fieldset>
      <OutputCycleField
        initial={ups?.outputCycle ?? false}
        upsName={ups?.name ?? ""}
        sourceType={type}
        error={errorOf("outputCycle")}
      />
      <ConfigOutcome
        state={state}
        confirmable={confirmable}
        pending={pending}
        savedText={ups ? "Saved." : "UPS added: the monitor picks it up within seconds."}
      />
      <SubmitActions
        pending={pending}
        label={ups ? "Save UPS" : "Add UPS"}
        pendingLabel="Saving…"
        testId="save-ups"
      />
    </form>
  );
}
