"use client";

import type { ReactNode } from "react";
import { Field, FieldError, TextField } from "./form-fields";

/** The credential's fields in focus order; forms list them after their own fields. */
export const CREDENTIAL_FIELDS = [
  "authMethod",
  "consoleKeyId",
  "password",
  "privateKey",
  "passphrase",
] as const;

export type CredentialChoice<M extends string> = { value: M; label: string; testId?: string };

/**
 * How the console logs in to a host, as the add-host and edit-host forms ask it: a radio per
 * method, then the chosen method's fields. The console's key needs no secret typed here, only
 * the instructions for installing it on the host; a method without fields (edit's "keep") shows
 * nothing below the radios.
 */
export function CredentialFields<M extends string>({
  legend,
  choices,
  method,
  onMethodChange,
  errorOf,
  consoleKey,
  labels,
}: {
  legend: string;
  choices: readonly CredentialChoice<M>[];
  method: M;
  onMethodChange: (method: M) => void;
  errorOf: (field: string) => string | undefined;
  /** The key submitted for "console_key" and what to do on the host before it works. */
  consoleKey: { id: string; instructions: ReactNode; testId?: string } | null;
  labels: { password: string; privateKey: string; passphraseHint?: string };
}) {
  const methodError = errorOf("authMethod");
  return (
    <>
      <fieldset
        className="field"
        aria-invalid={methodError ? true : undefined}
        aria-describedby={methodError ? "authMethod-error" : undefined}
      >
        <legend>{legend}</legend>
        <div className="radios">
          {choices.map(({ value, label, testId }) => (
            <label key={value}>
              <input
                type="radio"
                name="authMethod"
                value={value}
                checked={method === value}
                onChange={() => onMethodChange(value)}
                data-testid={testId}
              />{" "}
              {label}
            </label>
          ))}
        </div>
        <FieldError field="authMethod" error={methodError} />
      </fieldset>

      {method === "console_key" && consoleKey && (
        <div data-testid={consoleKey.testId}>
          <input type="hidden" name="consoleKeyId" value={consoleKey.id} />
          {consoleKey.instructions}
          <FieldError field="consoleKeyId" error={errorOf("consoleKeyId")} />
        </div>
      )}
      {method === "password" && (
        <TextField
          name="password"
          label={labels.password}
          type="password"
          error={errorOf("password")}
          autoComplete="off"
          required
        />
      )}
      {method === "private_key" && (
        <>
          <Field
            name="privateKey"
            label={labels.privateKey}
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
            hint={labels.passphraseHint}
            autoComplete="off"
          />
        </>
      )}
    </>
  );
}
