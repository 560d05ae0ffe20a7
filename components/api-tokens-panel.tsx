"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { createApiTokenAction } from "@/lib/actions/create-api-token";
import { revokeApiTokenAction } from "@/lib/actions/revoke-api-token";
import { SubmitActions, useActionForm } from "./action-form";
import styles from "./auth.module.css";
import { formatUtc } from "./catalog-format";
import { ConfirmDialog } from "./confirm-dialog";
import { TextField } from "./form-fields";
import { useConfirmedChange } from "./use-confirmed-change";

/** A token as lists show it: never the token itself, only its prefix. */
export type TokenRow = {
  id: string;
  userName: string;
  label: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
};

const FIELDS = ["label"] as const;

/** "Create token" form; the new token is shown once, with a copy button. */
export function CreateTokenForm() {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    createApiTokenAction,
    FIELDS,
  );
  // Which token the Copy button last copied: a newly created token starts as "not copied".
  const [copiedToken, setCopiedToken] = useState<string | null>(null);
  useEffect(() => {
    if (state?.ok) router.refresh();
  }, [state, router]);

  return (
    <>
      {state?.ok && (
        <div className="notice" role="status" data-testid="new-token">
          <p>
            Your new token <strong>{state.prefix}…</strong>. Copy it now: it is not shown again.
          </p>
          <div className={styles.tokenReveal}>
            <code data-testid="new-token-value">{state.token}</code>
            <button
              type="button"
              className="button"
              onClick={async () => {
                await navigator.clipboard.writeText(state.token);
                setCopiedToken(state.token);
              }}
            >
              {copiedToken === state.token ? "Copied" : "Copy"}
            </button>
          </div>
          <p className="small muted">
            Use it as <code>Authorization: Bearer …</code> against the JSON API.
          </p>
        </div>
      )}
      <form {...formProps} data-testid="create-token-form">
        {formError}
        <TextField
          name="label"
          label="Token label"
          hint="What uses it, e.g. “backup script on ops-01”."
          error={errorOf("label")}
          autoComplete="off"
          required
        />
        <SubmitActions pending={pending} label="Create token" pendingLabel="Creating…" />
      </form>
    </>
  );
}

/** Tokens with a confirmed Revoke each; `showOwner` for the admin's everyone-list. */
export function TokenTable({ tokens, showOwner }: { tokens: TokenRow[]; showOwner: boolean }) {
  const revocation = useConfirmedChange((token: TokenRow) =>
    revokeApiTokenAction({ tokenId: token.id }),
  );
  const revoking = revocation.subject;

  if (tokens.length === 0) return <p className="muted">No API tokens.</p>;

  return (
    <>
      <table className={`${styles.table} stack-on-phone`} data-testid="token-table">
        <thead>
          <tr>
            {showOwner && <th scope="col">Owner</th>}
            <th scope="col">Label</th>
            <th scope="col">Token</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {tokens.map((token) => (
            <tr key={token.id} data-testid={`token-${token.prefix}`}>
              {showOwner && <td>{token.userName}</td>}
              <td>{token.label}</td>
              <td className="mono">{token.prefix}…</td>
              <td>{formatUtc(token.createdAt)}</td>
              <td>{token.lastUsedAt ? formatUtc(token.lastUsedAt) : "never"}</td>
              <td>
                {token.revokedAt ? (
                  <span className="muted">revoked {formatUtc(token.revokedAt)}</span>
                ) : (
                  <button
                    type="button"
                    className="button button-danger"
                    onClick={() => revocation.ask(token)}
                    aria-label={`Revoke token ${token.label} (${token.prefix}…)`}
                  >
                    Revoke
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ConfirmDialog
        open={revoking !== null}
        title="Revoke API token"
        confirmLabel="Revoke token"
        pending={revocation.pending}
        error={revocation.error}
        onConfirm={revocation.confirm}
        onCancel={revocation.cancel}
        testId="revoke-token-dialog"
      >
        {revoking && (
          <p>
            Token <strong>{revoking.label}</strong> ({revoking.prefix}…) of {revoking.userName}{" "}
            stops working at once: every script using it gets 401 from then on. This cannot be
            undone; create a new token if it is still needed.
          </p>
        )}
      </ConfirmDialog>
    </>
  );
}
