"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { createPowerTargetAction } from "@/lib/actions/power/create-power-target";
import { updatePowerTargetAction } from "@/lib/actions/power/update-power-target";
import type { PowerTargetView } from "@/lib/power/operations/power-targets";
import type { TargetCandidate } from "@/lib/power/queries/target-candidates";
import { SubmitActions } from "../action-form";
import { Field, FieldError, TextField } from "../form-fields";
import { ConfigOutcome, useConfigForm } from "./config-form";
import { PbsWarning } from "./protection-table";

const FIELDS = [
  "kind",
  "hostId",
  "name",
  "address",
  "port",
  "tokenId",
  "tokenSecret",
  "certSha256",
  "feeds",
  "feedPolicy",
  "stage",
  "runsConsole",
  "enabled",
] as const;

type Ups = { id: string; name: string };

/**
 * A protected target: an onboarded host (a Proxmox VE node, reached with its own token and
 * pinned certificate) or a Proxmox Backup Server with its own; its feeds and all/any policy,
 * its stage, and whether it runs the console (then it goes last; the console never guesses).
 */
export function TargetForm({
  target = null,
  candidates,
  ups,
}: {
  target?: PowerTargetView | null;
  candidates: TargetCandidate[];
  ups: Ups[];
}) {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError, confirmation, confirmable, formRef } =
    useConfigForm(target ? updatePowerTargetAction : createPowerTargetAction, FIELDS);
  const [kind, setKind] = useState<"pve-node" | "pbs">(target?.kind ?? "pve-node");
  const feeds = new Set(target?.feeds.map((feed) => feed.upsId) ?? []);

  // Saved a new target: the form starts empty again — no host chosen, no feed ticked — so the
  // next save protects only a host someone chose (it kept the last one's values before).
  useEffect(() => {
    if (!(state?.ok && state.saved && !target)) return;
    formRef.current?.reset();
    router.refresh();
  }, [state, target, router, formRef]);

  return (
    <form {...formProps} data-testid="target-form">
      {formError}
      {confirmation}
      {target ? (
        <input type="hidden" name="id" value={target.id} />
      ) : (
        <Field name="kind" label="What to protect" error={errorOf("kind")}>
          {(props) => (
            <select
              {...props}
              className="control"
              value={kind}
              onChange={(event) => setKind(event.target.value as "pve-node" | "pbs")}
            >
              <option value="pve-node">An onboarded host (Proxmox VE node)</option>
              <option value="pbs">A Proxmox Backup Server</option>
            </select>
          )}
        </Field>
      )}
      {kind === "pve-node" && !target && (
        <Field name="hostId" label="Host" error={errorOf("hostId")}>
          {(props) => (
            <select {...props} className="control" defaultValue="">
              <option value="" disabled>
                {candidates.length === 0 ? "every host is protected already" : "choose a host"}
              </option>
              {candidates.map((host) => (
                <option key={host.id} value={host.id}>
                  {host.name} ({host.address}, {host.state}
                  {host.notReady ? ` — ${host.notReady}` : ""})
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      {kind === "pbs" && (
        <>
          <PbsWarning />
          <TextField
            name="name"
            label="Name"
            defaultValue={target?.name ?? ""}
            error={errorOf("name")}
            autoComplete="off"
          />
          <TextField
            name="address"
            label="Address"
            defaultValue={target?.address ?? ""}
            error={errorOf("address")}
            autoComplete="off"
            spellCheck={false}
          />
          <TextField
            name="port"
            label="API port"
            inputMode="numeric"
            defaultValue={String(target?.port ?? 8007)}
            error={errorOf("port")}
          />
          <TextField
            name="tokenId"
            label="API token id"
            hint="user@realm!name, holding Sys.PowerManagement on /system/status (PBS documents Admin there)."
            defaultValue={target?.tokenId ?? ""}
            error={errorOf("tokenId")}
            autoComplete="off"
            spellCheck={false}
          />
          <TextField
            name="tokenSecret"
            type="password"
            label="API token secret"
            hint={target ? "A secret is stored — leave empty to keep it." : undefined}
            error={errorOf("tokenSecret")}
            autoComplete="new-password"
          />
          <TextField
            name="certSha256"
            label="Certificate fingerprint (SHA-256)"
            hint="As the backup server's dashboard shows it: AB:CD:… The console pins it."
            defaultValue={target?.certSha256 ?? ""}
            error={errorOf("certSha256")}
            autoComplete="off"
            spellCheck={false}
          />
        </>
      )}
      <fieldset>
        <legend>Fed by</legend>
        {ups.length === 0 && <p className="muted">Add a UPS first.</p>}
        {ups.map((u) => (
          <label key={u.id} className="radios">
            <input type="checkbox" name="feeds" value={u.id} defaultChecked={feeds.has(u.id)} />{" "}
            {u.name}
          </label>
        ))}
        <FieldError field="feeds" error={errorOf("feeds")} />
      </fieldset>
      <fieldset>
        <legend>Shut down when</legend>
        <label className="radios">
          <input
            type="radio"
            name="feedPolicy"
            value="any"
            defaultChecked={(target?.feedPolicy ?? "any") === "any"}
          />{" "}
          any of its feeds fails
        </label>
        <label className="radios">
          <input
            type="radio"
            name="feedPolicy"
            value="all"
            defaultChecked={target?.feedPolicy === "all"}
          />{" "}
          all of its feeds fail (redundant power supplies: it stays up while one feed has mains)
        </label>
        <FieldError field="feedPolicy" error={errorOf("feedPolicy")} />
      </fieldset>
      <TextField
        name="stage"
        label="Stage"
        hint="Lower stages go down first; a stage's targets go down together."
        inputMode="numeric"
        defaultValue={String(target?.stage ?? 0)}
        error={errorOf("stage")}
      />
      <div className="field">
        <input type="hidden" name="runsConsole" value="false" />
        <label>
          <input type="checkbox" name="runsConsole" defaultChecked={target?.runsConsole} /> This
          host runs the console (it is shut down last; at most one)
        </label>
        <FieldError field="runsConsole" error={errorOf("runsConsole")} />
      </div>
      {target && (
        <div className="field">
          <input type="hidden" name="enabled" value="false" />
          <label>
            <input type="checkbox" name="enabled" defaultChecked={target.enabled} /> Protected
            (unticked: never shut down)
          </label>
        </div>
      )}
      <ConfigOutcome
        state={state}
        confirmable={confirmable}
        pending={pending}
        savedText={target ? "Saved." : "Target added."}
      />
      <SubmitActions
        pending={pending}
        label={target ? "Save target" : "Protect this target"}
        pendingLabel="Saving…"
        testId="save-target"
      />
    </form>
  );
}
