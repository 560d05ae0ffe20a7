"use client";

import { useRouter } from "next/navigation";
import {
  startTransition,
  useActionState,
  useEffect,
  useRef,
  useState,
  type InputHTMLAttributes,
  type ReactNode,
} from "react";
import { createHostAction, type CreateHostResult } from "@/lib/actions/create-host";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = [
  "name",
  "address",
  "sshPort",
  "sshUser",
  "apiPort",
  "authMethod",
  "password",
  "privateKey",
  "passphrase",
] as const;
type FieldName = (typeof FIELDS)[number];

/**
 * The add-host form. Submits through the `createHost` server action; field errors appear under
 * their fields, anything else above the form. On success it opens the new host's page.
 */
export function HostForm() {
  const router = useRouter();
  const [state, formAction, pending] = useActionState<CreateHostResult | null, FormData>(
    createHostAction,
    null,
  );
  const [authMethod, setAuthMethod] = useState<"password" | "private_key">("password");
  const formRef = useRef<HTMLFormElement>(null);
  const formErrorRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    if (!state) return;
    if (state.ok) {
      router.push(`/hosts/${state.hostId}`);
      return;
    }
    const first = FIELDS.find((field) => state.fieldErrors[field]?.length);
    const target = first
      ? formRef.current?.querySelector<HTMLElement>(`[name="${first}"]`)
      : formErrorRef.current;
    target?.focus();
  }, [state, router]);

  const errors = state && !state.ok ? state.fieldErrors : {};
  const errorOf = (field: FieldName) => errors[field]?.[0];
  const unknownFieldErrors = Object.entries(errors).filter(
    ([field]) => !(FIELDS as readonly string[]).includes(field),
  );

  return (
    <form
      ref={formRef}
      className="form"
      action={formAction}
      noValidate
      // Submitting through a transition ourselves keeps what the operator typed (React resets
      // a form after an action passed to `action`); without JavaScript, `action` still works.
      onSubmit={(event) => {
        event.preventDefault();
        const data = new FormData(event.currentTarget);
        startTransition(() => formAction(data));
      }}
      data-testid="host-form"
    >
      {state && !state.ok && (
        <div
          ref={formErrorRef}
          className="notice notice-error"
          role="alert"
          tabIndex={-1}
          data-testid="form-error"
        >
          <p>{state.message}</p>
          {unknownFieldErrors.map(([field, messages]) => (
            <p key={field}>
              {field}: {messages[0]}
            </p>
          ))}
        </div>
      )}

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

      {authMethod === "password" ? (
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

type ControlProps = {
  id: string;
  name: string;
  "aria-invalid": true | undefined;
  "aria-describedby": string | undefined;
};

function Field({
  name,
  label,
  error,
  hint,
  children,
}: {
  name: FieldName;
  label: string;
  error: string | undefined;
  hint?: string;
  children: (props: ControlProps) => ReactNode;
}) {
  const describedBy = [hint && `${name}-hint`, error && `${name}-error`].filter(Boolean).join(" ");
  return (
    <div className={`field${error ? " field-invalid" : ""}`}>
      <label htmlFor={name}>{label}</label>
      {children({
        id: name,
        name,
        "aria-invalid": error ? true : undefined,
        "aria-describedby": describedBy || undefined,
      })}
      {hint && (
        <p id={`${name}-hint`} className="field-hint">
          {hint}
        </p>
      )}
      <FieldError field={name} error={error} />
    </div>
  );
}

function FieldError({ field, error }: { field: FieldName; error: string | undefined }) {
  if (!error) return null;
  return (
    <p id={`${field}-error`} className="field-error" data-testid={`error-${field}`}>
      <span aria-hidden="true">✕ </span>
      {error}
    </p>
  );
}

function TextField({
  name,
  label,
  error,
  hint,
  ...input
}: {
  name: FieldName;
  label: string;
  error: string | undefined;
  hint?: string;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "name" | "id">) {
  return (
    <Field name={name} label={label} error={error} hint={hint}>
      {(props) => <input type="text" {...input} {...props} />}
    </Field>
  );
}
