"use client";

import { useState } from "react";
import { ConfirmDialog } from "../confirm-dialog";
import { Field } from "../form-fields";

/**
 * The UPS's output cycle after a shutdown (off by default). Turning it on opens a confirmation
 * that says exactly what the console will then do to this UPS; Cancel leaves it off. The form
 * posts `outputCycle` as `true`/`false` (lib/actions/power/power-form-input.ts).
 */
export function OutputCycleField({
  initial,
  upsName,
  sourceType,
  error,
}: {
  initial: boolean;
  upsName: string;
  sourceType: "nut" | "snmp";
  error: string | undefined;
}) {
  const [on, setOn] = useState(initial);
  const [asking, setAsking] = useState(false);
  const ups = upsName.trim() === "" ? "this UPS" : upsName.trim();
  return (
    <fieldset>
      <legend>After a shutdown</legend>
      <Field name="outputCycle" label="Cycle the UPS's output" error={error}>
        {(props) => (
          <select
            {...props}
            className="control"
            value={on ? "true" : "false"}
            onChange={(event) => {
              if (event.target.value === "true" && !on) setAsking(true);
              else setOn(event.target.value === "true");
            }}
            data-testid="output-cycle"
          >
            <option value="false">off (default)</option>
            <option value="true">on: turn the output off and on again when mains returns</option>
          </select>
        )}
      </Field>
      <p className="muted small">
        {sourceType === "nut"
          ? 'Sent as NUT INSTCMD <ups> shutdown.return; the NUT user needs "instcmds = shutdown.return" in upsd.users.'
          : "Not possible over SNMP: the console holds read access only. A run records it as not sent, with the reason."}
      </p>
      <ConfirmDialog
        open={asking}
        title={`Cycle the output of ${ups} after a shutdown`}
        confirmLabel="Turn on the output cycle"
        onConfirm={() => {
          setOn(true);
          setAsking(false);
        }}
        onCancel={() => setAsking(false)}
        testId="output-cycle-dialog"
      >
        <p>
          When a shutdown run of an outage on {ups} has seen <strong>every</strong> host fed by{" "}
          {ups} go down, and {ups} is still on battery (read just then), the console asks {ups} to{" "}
          <strong>turn its output off</strong> after its shutdown delay and on again when mains
          returns (NUT <span className="mono">INSTCMD shutdown.return</span>).
        </p>
        <p>
          Everything plugged into {ups} loses power then — also devices the console does not know.
          Hosts whose BIOS is set to power on after AC loss boot when the output returns.
        </p>
        <p>
          It is never sent while any host on {ups} still answers or was not shut down by the run,
          when the console&apos;s own host is on {ups}, in dry-run or in a drill. Saving the form
          stores the setting; nothing is sent now.
        </p>
      </ConfirmDialog>
    </fieldset>
  );
}
