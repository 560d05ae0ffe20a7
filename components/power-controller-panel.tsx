"use client";

import { useRef, useState, useTransition } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import {
  deletePowerControllerAction,
  powerOnHostAction,
  readPowerStateAction,
  setPowerControllerAction,
} from "@/lib/actions/power-controller";
import {
  deleteTargetPowerControllerAction,
  powerOnTargetAction,
  readTargetPowerStateAction,
  setTargetPowerControllerAction,
} from "@/lib/actions/target-power-controller";
import type { PowerReading } from "@/lib/power-controllers/controller";
import type { PowerControllerKind, PowerControllerView } from "@/lib/power-controllers/schemas";
import { useCan } from "./actor-context";
import { BmcSuggestion } from "./bmc-suggestion";
import { ConfirmedAction, useConfirmedAction } from "./confirmed-action";
import { errorsOf, Field, FormError, TextField, useFocusFirstInvalid } from "./form-fields";

const KIND_LABEL: Record<PowerControllerKind, string> = {
  redfish: "Redfish (HTTPS)",
  ipmi: "IPMI over LAN",
  wol: "Wake-on-LAN",
  "pve-wol": "Wake-on-LAN via a cluster member",
};
const FIELDS = [
  "kind",
  "address",
  "port",
  "username",
  "password",
  "systemId",
  "mac",
  "broadcastAddress",
  "auth",
] as const;

function describe(view: PowerControllerView): string {
  if (view.kind === "pve-wol") return "POST /nodes/{node}/wakeonlan through a member that is up";
  if (view.kind === "wol") return `${view.mac} via ${view.broadcastAddress}:${view.port}`;
  return `${view.address}:${view.port} as ${view.username}${view.kind === "redfish" ? `, system ${view.systemId}${view.redfishAuth === "session" ? ", Redfish session" : ""}` : ""}`;
}

/**
 * Whose controller the panel shows: an onboarded host's (the host page), or a Proxmox Backup
 * Server's (its power target on /power/targets; no host row, no cluster, no in-band BMC report).
 */
export type PowerControllerOwner =
  | {
      kind: "host";
      hostId: string;
      /** Its Proxmox cluster; null: standalone or not known. */ clusterName: string | null;
    }
  | { kind: "pbs"; targetId: string; name: string };

/** What "Power on" will do, exactly, for the confirmation. */
function powerOnWords(view: PowerControllerView): string {
  if (view.kind === "pve-wol") {
    return "The console asks another member of this host's cluster whose API answers to send Proxmox's Wake-on-LAN packet for this node (POST /nodes/{node}/wakeonlan, the MAC in the node's wakeonlan setting). A machine that is off and set to wake on LAN starts; one that is on ignores it. Wake-on-LAN cannot say whether it woke.";
  }
  if (view.kind === "wol") {
    return `The console sends a Wake-on-LAN magic packet for ${view.mac} to ${view.broadcastAddress}:${view.port}. A machine that is off and set to wake on LAN starts; one that is on ignores it. Wake-on-LAN cannot say whether it woke.`;
  }
  const kind = view.kind === "redfish" ? "Redfish" : "IPMI";
  return `The console asks the ${kind} controller at ${view.address}:${view.port} for the power state. If it reads On, nothing is sent. Otherwise it sends "power on" (${view.kind === "redfish" ? "ComputerSystem.Reset On" : "chassis power on"}) and reads the state back. Nothing is shut down or reset.`;
}

function readingText(reading: PowerReading): string {
  if (reading.state === "on") return `On — ${reading.detail}.`;
  if (reading.state === "off") return `Off — ${reading.detail}.`;
  return `Could not ask: ${reading.reason}`;
}

/**
 * A host's or a backup server's out-of-band power controller: what it is, its power state asked
 * on demand, and — for admins — the form that sets or removes it. The password is write-only:
 * the form never shows the stored one, an empty field keeps it.
 */
export function PowerControllerPanel({
  whose,
  initial,
}: {
  whose: PowerControllerOwner;
  initial: PowerControllerView | null;
}) {
  const hostId = whose.kind === "host" ? whose.hostId : null;
  const clusterName = whose.kind === "host" ? whose.clusterName : null;
  const machine = whose.kind === "host" ? "this host" : `the backup server ${whose.name}`;
  const owner = whose.kind === "host" ? { hostId: whose.hostId } : { targetId: whose.targetId };
  const idPrefix = whose.kind === "host" ? "power-controller" : `pbs-controller-${whose.targetId}`;
  // A backup server's form shares /power/targets with the target's own form (its address, its
  // port): its fields take ids of their own, so each label names its own input.
  const fieldId = (name: string) => (whose.kind === "host" ? name : `pbs-controller-${name}`);
  const isAdmin = useCan("admin");
  const isOperator = useCan("operator");
  const [controller, setController] = useState(initial);
  const [reading, setReading] = useState<PowerReading | null>(null);
  const [editing, setEditing] = useState(false);
  const [kind, setKind] = useState<PowerControllerKind>(initial?.kind ?? "redfish");
  const [result, setResult] = useState<ActionResult | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  // A power-on the controller does not read back as On is said, never marked as done.
  const [messageWarns, setMessageWarns] = useState(false);
  const [pending, startTransition] = useTransition();
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);
  useFocusFirstInvalid(result, FIELDS, formRef, formErrorRef);
  const errors = errorsOf(result);
  const errorOf = (field: string) => errors[field]?.[0];
  const same = controller?.kind === kind ? controller : null;
  // The address the host reported, once the admin chose to use it (the field is re-made with it).
  const [usedAddress, setUsedAddress] = useState<string | null>(null);
  const remove = useConfirmedAction<ActionResult<{ deleted: PowerControllerKind }>>(
    () =>
      whose.kind === "host"
        ? deletePowerControllerAction({ hostId: whose.hostId })
        : deleteTargetPowerControllerAction({ targetId: whose.targetId }),
    {
      onSuccess: () => {
        setController(null);
        setReading(null);
        setMessage("Power controller removed.");
        setMessageWarns(false);
      },
    },
  );

  const powerOn = useConfirmedAction<
    ActionResult<{ outcome: { after: PowerReading | null; message: string } }>
  >(
    () =>
      whose.kind === "host"
        ? powerOnHostAction({ hostId: whose.hostId })
        : powerOnTargetAction({ targetId: whose.targetId }),
    {
      onSuccess: ({ outcome }) => {
        setReading(outcome.after);
        setMessage(outcome.message);
        setMessageWarns(outcome.after?.state !== "on");
      },
    },
  );

  const read = () =>
    startTransition(async () => {
      const answer =
        whose.kind === "host"
          ? await readPowerStateAction({ hostId: whose.hostId })
          : await readTargetPowerStateAction({ targetId: whose.targetId });
      if (answer.ok) {
        setReading(answer.state);
        setController(answer.controller);
      } else {
        setMessage(answer.message);
        setMessageWarns(true);
      }
    });

  return (
    <section className="panel" aria-labelledby={`${idPrefix}-heading`}>
      <div className="panel-head">
        <h2 id={`${idPrefix}-heading`}>
          Power controller{whose.kind === "pbs" ? ` of ${whose.name}` : ""}
        </h2>
        {controller && (
          <button
            type="button"
            className="button"
            onClick={read}
            disabled={pending}
            data-testid="power-controller-read"
          >
            Read power state
          </button>
        )}
      </div>
      {controller ? (
        <p data-testid="power-controller-summary">
          {KIND_LABEL[controller.kind]}: <span className="mono">{describe(controller)}</span>
          {controller.kind === "redfish" && (
            <span className="muted small">
              {" · certificate "}
              {controller.certSha256 ? (
                <span className="mono" title={controller.certSha256}>
                  pinned
                </span>
              ) : (
                "pinned at first contact"
              )}
            </span>
          )}
        </p>
      ) : (
        <p className="muted" data-testid="power-controller-summary">
          None: the console cannot power {machine} on after an outage.
        </p>
      )}
      {reading && (
        <p
          className={`notice ${reading.state === "unknown" ? "notice-warning" : "notice-ok"}`}
          role="status"
          data-testid="power-controller-state"
        >
          {readingText(reading)}
        </p>
      )}
      {message && (
        <p
          className={`notice ${messageWarns ? "notice-warning" : "notice-ok"}`}
          role="status"
          data-testid="power-controller-message"
        >
          {message}
        </p>
      )}
      {controller && isOperator && !editing && (
        <div className="form-actions">
          <ConfirmedAction
            state={powerOn}
            label="Power on"
            className="button button-primary"
            testId="power-controller-power-on"
            confirm={{
              title: whose.kind === "host" ? "Power this host on?" : `Power ${whose.name} on?`,
              confirmLabel: "Power on",
              testId: "power-controller-power-on-dialog",
              body: <p>{powerOnWords(controller)}</p>,
            }}
          />
        </div>
      )}
      {isAdmin && !editing && (
        <div className="form-actions">
          <button
            type="button"
            className="button"
            onClick={() => {
              setEditing(true);
              setResult(null);
              setMessage(null);
            }}
            data-testid="power-controller-edit"
          >
            {controller ? "Change" : "Set a power controller"}
          </button>
          {controller && (
            <ConfirmedAction
              state={remove}
              label="Remove"
              className="button button-danger"
              testId="power-controller-remove"
              confirm={{
                title: "Remove the power controller?",
                confirmLabel: "Remove",
                testId: "power-controller-remove-dialog",
                body: (
                  <p>
                    The console forgets {KIND_LABEL[controller.kind]} at{" "}
                    <span className="mono">{describe(controller)}</span> and its password; it can
                    then no longer power {machine} on after an outage.
                  </p>
                ),
              }}
            />
          )}
        </div>
      )}
      {isAdmin && editing && (
        <form
          ref={formRef}
          className="form"
          noValidate
          data-testid="power-controller-form"
          onSubmit={(event) => {
            event.preventDefault();
            const data = new FormData(event.currentTarget);
            startTransition(async () => {
              const answer =
                whose.kind === "host"
                  ? await setPowerControllerAction(data)
                  : await setTargetPowerControllerAction(data);
              setResult(answer);
              if (!answer.ok) return;
              setController(answer.controller);
              setReading(null);
              setEditing(false);
              setMessage("Power controller saved.");
              setMessageWarns(false);
            });
          }}
        >
          {Object.entries(owner).map(([name, value]) => (
            <input key={name} type="hidden" name={name} value={value} />
          ))}
          {result && !result.ok && <FormError state={result} fields={FIELDS} ref={formErrorRef} />}
          <Field name="kind" id={fieldId("kind")} label="Kind" error={errorOf("kind")}>
            {(props) => (
              <select
                {...props}
                value={kind}
                onChange={(event) => setKind(event.target.value as PowerControllerKind)}
                data-testid="power-controller-kind"
              >
                {(Object.keys(KIND_LABEL) as PowerControllerKind[])
                  // Through the cluster only for a member (the server checks it as well).
                  // Never for a backup server: it is in no Proxmox VE cluster.
                  .filter(
                    (value) =>
                      value !== "pve-wol" ||
                      (whose.kind === "host" && (clusterName || initial?.kind === value)),
                  )
                  .map((value) => (
                    <option key={value} value={value}>
                      {KIND_LABEL[value]}
                    </option>
                  ))}
              </select>
            )}
          </Field>
          {kind === "pve-wol" ? (
            <p className="muted small" data-testid="power-controller-pve-wol-hint">
              Another member of {clusterName ?? "its cluster"} whose API answers sends the magic
              packet (Proxmox&apos;s POST /nodes/&#123;node&#125;/wakeonlan). Nothing to enter here:
              set the node&apos;s MAC in Proxmox (
              <span className="mono">pvenode config set --wakeonlan &lt;MAC&gt;</span>) and enable
              Wake-on-LAN in its firmware and NIC. The power self-test reads the setting.
            </p>
          ) : kind === "wol" ? (
            <>
              <TextField
                key="mac"
                name="mac"
                id={fieldId("mac")}
                label="MAC address"
                hint="The NIC that wakes the host, e.g. aa:bb:cc:dd:ee:ff."
                defaultValue={same?.mac ?? ""}
                error={errorOf("mac")}
              />
              <TextField
                key="broadcastAddress"
                name="broadcastAddress"
                id={fieldId("broadcastAddress")}
                label="Broadcast address"
                hint="Of the host's network, e.g. 192.168.1.255; the console's machine must reach it."
                defaultValue={same?.broadcastAddress ?? ""}
                error={errorOf("broadcastAddress")}
              />
              <TextField
                key="wol-port"
                name="port"
                id={fieldId("port")}
                label="UDP port"
                hint="9 unless your network forwards another."
                defaultValue={String(same?.port ?? 9)}
                error={errorOf("port")}
              />
            </>
          ) : (
            <>
              {hostId && <BmcSuggestion hostId={hostId} onUse={setUsedAddress} />}
              <TextField
                key={`address-${usedAddress ?? ""}`}
                name="address"
                id={fieldId("address")}
                label="BMC address"
                hint="The BMC's own IP address or name (iDRAC, iLO, IPMI), not the host's."
                defaultValue={usedAddress ?? same?.address ?? ""}
                error={errorOf("address")}
              />
              <TextField
                key={`${kind}-port`}
                name="port"
                id={fieldId("port")}
                label={kind === "redfish" ? "HTTPS port" : "UDP port"}
                defaultValue={String(same?.port ?? (kind === "redfish" ? 443 : 623))}
                error={errorOf("port")}
              />
              <TextField
                key="username"
                name="username"
                id={fieldId("username")}
                label="BMC user"
                defaultValue={same?.username ?? ""}
                autoComplete="off"
                error={errorOf("username")}
              />
              <TextField
                key="password"
                name="password"
                id={fieldId("password")}
                type="password"
                label="BMC password"
                hint={same ? "Leave empty to keep the stored password." : undefined}
                autoComplete="new-password"
                error={errorOf("password")}
              />
              {kind === "redfish" && (
                <Field
                  name="auth"
                  id={fieldId("auth")}
                  label="Redfish login"
                  error={errorOf("auth")}
                >
                  {(props) => (
                    <select
                      {...props}
                      defaultValue={same?.redfishAuth ?? "basic"}
                      data-testid="power-controller-auth"
                    >
                      <option value="basic">Basic auth on each request</option>
                      <option value="session">A Redfish session per use (X-Auth-Token)</option>
                    </select>
                  )}
                </Field>
              )}
              {kind === "redfish" && (
                <TextField
                  key="systemId"
                  name="systemId"
                  id={fieldId("systemId")}
                  label="System id"
                  hint="As in /redfish/v1/Systems/<id>: 1 on most BMCs, System.Embedded.1 on Dell iDRAC."
                  defaultValue={same?.systemId ?? "1"}
                  error={errorOf("systemId")}
                />
              )}
            </>
          )}
          <div className="form-actions">
            <button
              type="submit"
              className="button button-primary"
              disabled={pending}
              data-testid="power-controller-save"
            >
              Save
            </button>
            <button type="button" className="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
          </div>
        </form>
      )}
    </section>
  );
}
