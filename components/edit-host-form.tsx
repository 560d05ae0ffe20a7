"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useRef, useState, useTransition } from "react";
import type { ActionResult } from "@/lib/actions/action-result";
import { editHostAction, type EditHostActionResult } from "@/lib/actions/edit-host";
import {
  testConnectionAction,
  type TestConnectionActionResult,
} from "@/lib/actions/test-connection";
import type { HostDetail } from "@/lib/hosts/get-host";
import { CopyField } from "./copy-field";
import { CREDENTIAL_FIELDS, CredentialFields } from "./credential-fields";
import { errorsOf, FormError, TextField, useFocusFirstInvalid } from "./form-fields";
import type { HostFormConsoleKey } from "./host-form";
import { liveKeys } from "./live-keys";
import { SshLoginFields } from "./ssh-login-fields";

const FIELDS = ["address", "sshPort", "sshUser", ...CREDENTIAL_FIELDS, "subscriptionKey"] as const;
type Method = "keep" | "console_key" | "password" | "private_key";

type Outcome =
  | { kind: "test"; result: TestConnectionActionResult }
  | { kind: "save"; result: EditHostActionResult };

const CURRENT: Record<HostDetail["authMethod"], string> = {
  password: "password",
  private_key: "private key",
  console_key: "the console's key",
};

/**
 * Where and how the console logs in to a host. Nothing is saved before a live SSH login with
 * the new settings succeeded against the pinned host key ("Save" tests first); "Test
 * connection" only tests. A refused password lands on the password field, a changed host key
 * in the notice above the form with what it can mean.
 */
export function EditHostForm({
  host,
  consoleKey,
  onDone,
}: {
  host: HostDetail;
  consoleKey: HostFormConsoleKey | null;
  onDone: (message: string) => void;
}) {
  const queryClient = useQueryClient();
  const [method, setMethod] = useState<Method>("keep");
  const [outcome, setOutcome] = useState<Outcome | null>(null);
  const [pending, startTransition] = useTransition();
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);

  const state: ActionResult | null = outcome?.result ?? null;
  useFocusFirstInvalid(state, FIELDS, formRef, formErrorRef);
  const errors = errorsOf(state);
  const errorOf = (field: string) => errors[field]?.[0];

  const send = (kind: Outcome["kind"]) => {
    const form = formRef.current;
    if (!form) return;
    const data = new FormData(form);
    startTransition(async () => {
      if (kind === "test") {
        setOutcome({ kind, result: await testConnectionAction(data) });
        return;
      }
      const result = await editHostAction(null, data);
      setOutcome({ kind, result });
      if (!result.ok) return;
      await Promise.all([
        queryClient.invalidateQueries({ queryKey: liveKeys.host(host.id) }),
        queryClient.invalidateQueries({ queryKey: liveKeys.hosts }),
      ]);
      onDone(
        result.changes.length > 0
          ? `Saved after a successful connection test: ${result.changes.join("; ")}.`
          : "Connection tested; nothing changed.",
      );
    });
  };

  const tested = outcome?.kind === "test" && outcome.result.ok ? outcome.result.test : null;
  const choices = (
    [
      ["keep", `Keep the current one (${CURRENT[host.authMethod]})`],
      ["console_key", "The console's key"],
      ["password", "New password"],
      ["private_key", "New private key"],
    ] as const
  )
    .filter(([value]) => value !== "console_key" || consoleKey)
    .map(([value, label]) => ({ value, label, testId: `edit-auth-${value}` }));

  return (
    <form
      ref={formRef}
      className="form"
      noValidate
      onSubmit={(event) => {
        event.preventDefault();
        send("save");
      }}
      data-testid="edit-host-form"
    >
      <input type="hidden" name="hostId" value={host.id} />
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}
      {tested && (
        <p className="notice notice-ok" role="status" data-testid="test-connection-ok">
          Connection works: logged in as {host.sshUser === "root" ? "root" : "a sudo user"} (
          {tested.privilege}); the host presented {tested.hostKeySha256}
          {host.hostKeySha256
            ? ", the pinned key."
            : ". No key is pinned yet: it is pinned when you save."}{" "}
          Nothing was saved.
        </p>
      )}

      <TextField
        name="address"
        label="Address"
        error={errorOf("address")}
        defaultValue={host.address}
        required
        autoComplete="off"
      />
      <div className="field-row">
        <SshLoginFields
          defaults={{ sshPort: String(host.sshPort), sshUser: host.sshUser }}
          errorOf={errorOf}
        />
      </div>

      <CredentialFields
        legend="Credential"
        choices={choices}
        method={method}
        onMethodChange={setMethod}
        errorOf={errorOf}
        consoleKey={
          consoleKey && {
            id: consoleKey.id,
            instructions: (
              <>
                <p className="field-hint">
                  Install the console&apos;s key ({consoleKey.fingerprint}) on the host first, as
                  the SSH user above; saving logs in with it before anything changes.
                </p>
                <CopyField
                  label="Install command"
                  value={consoleKey.installCommand}
                  rows={4}
                  testId="edit-console-key-install-command"
                />
              </>
            ),
          }
        }
        labels={{ password: "New SSH password", privateKey: "New private key" }}
      />

      <TextField
        name="subscriptionKey"
        label={
          host.proxmox.hasSubscriptionKey
            ? "New Proxmox VE subscription key (a key is stored)"
            : "Proxmox VE subscription key (none stored)"
        }
        error={errorOf("subscriptionKey")}
        hint="Empty keeps what is stored. A new key is applied by ApplySubscription on the next Retry or onboarding, and the host then uses the enterprise repository."
        autoComplete="off"
        spellCheck={false}
      />

      <div className="form-actions">
        <button
          type="button"
          className="button"
          disabled={pending}
          onClick={() => send("test")}
          data-testid="test-connection"
        >
          {pending && outcome?.kind !== "save" ? "Testing…" : "Test connection"}
        </button>
        <button
          type="submit"
          className="button button-primary"
          disabled={pending}
          data-testid="save-host"
        >
          {pending ? "Working…" : "Test and save"}
        </button>
      </div>
    </form>
  );
}
