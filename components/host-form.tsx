"use client";

import { useRouter } from "next/navigation";
import { useActionState, useEffect, useRef, useState } from "react";
import { createHostAction, type CreateHostResult } from "@/lib/actions/create-host";
import type { AuthMethod } from "@/lib/hosts/schemas";
import { CopyField } from "./copy-field";
import {
  errorsOf,
  Field,
  FieldError,
  FormError,
  submitKeepingInput,
  TextField,
  useFocusFirstInvalid,
} from "./form-fields";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = [
  "name",
  "address",
  "sshPort",
  "sshUser",
  "apiPort",
  "authMethod",
  "consoleKeyId",
  "password",
  "privateKey",
  "passphrase",
] as const;
type FieldName = (typeof FIELDS)[number];

/** What the form shows of the console's key (never the private half). */
export type HostFormConsoleKey = {
  id: string;
  publicKey: string;
  fingerprint: string;
  installCommand: string;
};

/**
 * The add-host form. Submits through the `createHost` server action; field errors appear under
 * their fields, anything else above the form. On success it opens the new host's page.
 *
 * Password is preselected: a freshly installed Debian host accepts it as delivered, while the
 * console's key first has to be installed on the host (the form shows the one-line command).
 */
export function HostForm({ consoleKey }: { consoleKey: HostFormConsoleKey }) {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<CreateHostResult | null, FormData>(
    createHostAction,
    null,
  );
  const [authMethod, setAuthMethod] = useState<AuthMethod>("password");
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);

  useFocusFirstInvalid(state, FIELDS, formRef, formErrorRef);
  useEffect(() => {
    if (state?.ok) router.push(`/hosts/${state.hostId}`);
  }, [state, router]);

  const errors = errorsOf(state);
  const errorOf = (field: FieldName) => errors[field]?.[0];

  return (
    <form
      ref={formRef}
      className="form"
      action={formAction}
      noValidate
      onSubmit={submitKeepingInput(formAction)}
      data-testid="host-form"
    >
      {state && !state.ok && <FormError state={state} fields={FIELDS} ref={formErrorRef} />}

      <TextField
        name="name"
        label="Name"
        error={errorOf("name")}
        hint="The Proxmox node name, e.g. pve-01."
        required
        autoComplete="off"
      />
      <TextField
        name="address"
        label="Address"
        error={errorOf("address")}
        hint="IP address or DNS name the console reaches the host on."
        required
        autoComplete="off"
      />
      <div className="field-row">
        <TextField
          name="sshPort"
          label="SSH port"
          error={errorOf("sshPort")}
          defaultValue="22"
          inputMode="numeric"
          required
        />
        <TextField
          name="sshUser"
          label="SSH user"
          error={errorOf("sshUser")}
          defaultValue="root"
          hint="root, or a user with passwordless sudo."
          required
          autoComplete="off"
        />
        <TextField
          name="apiPort"
          label="Proxmox API port"
          error={errorOf("apiPort")}
          defaultValue="8006"
          inputMode="numeric"
          hint="8006 unless the API is forwarded elsewhere."
        />
      </div>

      <fieldset
        className="field"
        aria-invalid={errorOf("authMethod") ? true : undefined}
        aria-describedby={errorOf("authMethod") ? "authMethod-error" : undefined}
      >
        <legend>Authentication</legend>
        <div className="radios">
          <label>
            <input
              type="radio"
              name="authMethod"
              value="console_key"
              checked={authMethod === "console_key"}
              onChange={() => setAuthMethod("console_key")}
            />{" "}
            Use the console&apos;s key
          </label>
          <label>
            <input
              type="radio"
              name="authMethod"
              value="password"
              checked={authMethod === "password"}
              onChange={() => setAuthMethod("password")}
            />{" "}
            Password
          </label>
          <label>
            <input
              type="radio"
              name="authMethod"
              value="private_key"
              checked={authMethod === "private_key"}
              onChange={() => setAuthMethod("private_key")}
            />{" "}
            Private key
          </label>
        </div>
        <FieldError field="authMethod" error={errorOf("authMethod")} />
      </fieldset>

      {authMethod === "console_key" ? (
        <div data-testid="console-key-install">
          <input type="hidden" name="consoleKeyId" value={consoleKey.id} />
          <p className="field-hint">
            Run this once on the host as the SSH user above; it adds the console&apos;s public key (
            {consoleKey.fingerprint}) to <span className="mono">~/.ssh/authorized_keys</span>. The
            console keeps the private key; nothing secret is typed here.
          </p>
          <CopyField
            label="Install command"
            value={consoleKey.installCommand}
            rows={4}
            testId="console-key-install-command"
          />
          <CopyField
            label="Public key"
            value={consoleKey.publicKey}
            rows={2}
            testId="console-key-public"
          />
          <FieldError field="consoleKeyId" error={errorOf("consoleKeyId")} />
        </div>
      ) : authMethod === "password" ? (
        <TextField
          name="password"
          label="SSH password"
          type="password"
          error={errorOf("password")}
          autoComplete="off"
          required
        />
      ) : (
        <>
          <Field
            name="privateKey"
            label="Private key"
            error={errorOf("privateKey")}
            hint="Paste the whole key file. It is stored encrypted and never shown again."
          >
            {(props) => (
              <textarea
                {...props}
                rows={8}
                spellCheck={false}
                autoComplete="off"
                className="mono"
                required
              />
            )}
          </Field>
          <TextField
            name="passphrase"
            label="Passphrase (optional)"
            type="password"
            error={errorOf("passphrase")}
            hint="Only if the key is encrypted."
            autoComplete="off"
          />
        </>
      )}

      <div className="form-actions">
        <button
          type="submit"
          className="button button-primary"
          disabled={pending}
          data-testid="submit-host"
        >
          {pending ? "Adding…" : "Add host and start onboarding"}
        </button>
      </div>
    </form>
  );
}
