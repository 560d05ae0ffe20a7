"use client";

import { useRouter } from "next/navigation";
import { useEffect, useRef, useState } from "react";
import { changeUserRoleAction } from "@/lib/actions/change-user-role";
import { createUserAction } from "@/lib/actions/create-user";
import { resetUserPasswordAction } from "@/lib/actions/reset-user-password";
import { setUserDisabledAction } from "@/lib/actions/set-user-disabled";
import { ROLES, type Role } from "@/lib/roles";
import { SubmitActions, useActionForm } from "./action-form";
import styles from "./auth.module.css";
import { formatUtc } from "./catalog-format";
import { ConfirmDialog } from "./confirm-dialog";
import { Field, NewPasswordField, TextField } from "./form-fields";
import { useConfirmedChange } from "./use-confirmed-change";

export type UserRow = {
  id: string;
  name: string;
  role: Role;
  disabled: boolean;
  createdAt: string;
};

const CREATE_FIELDS = ["name", "role", "password"] as const;

/** Admin: a new user with a role and an initial password. */
export function CreateUserForm() {
  const router = useRouter();
  const { state, pending, formRef, errorOf, formProps, formError } = useActionForm(
    createUserAction,
    CREATE_FIELDS,
  );
  useEffect(() => {
    if (state?.ok) {
      formRef.current?.reset();
      router.refresh();
    }
  }, [state, router, formRef]);
  return (
    <form {...formProps} data-testid="create-user-form">
      {formError}
      {state?.ok && (
        <p className="notice" role="status" data-testid="user-created">
          Created {state.name}. Give them the initial password; they can change it on their account
          page.
        </p>
      )}
      <TextField
        name="name"
        label="New user name"
        error={errorOf("name")}
        autoComplete="off"
        required
      />
      <Field name="role" label="Role" error={errorOf("role")}>
        {(props) => (
          <select {...props} defaultValue="viewer">
            <RoleOptions />
          </select>
        )}
      </Field>
      <NewPasswordField name="password" label="Initial password" error={errorOf("password")} />
      <SubmitActions pending={pending} label="Create user" pendingLabel="Creating…" />
    </form>
  );
}

function RoleOptions() {
  return ROLES.map((role) => (
    <option key={role} value={role}>
      {role}
    </option>
  ));
}

type Pending =
  | { kind: "role"; user: UserRow; role: Role }
  | { kind: "disable"; user: UserRow }
  | { kind: "enable"; user: UserRow };

/** Every user: role change, disable/enable (each confirmed) and password reset. */
export function UsersTable({ users, selfId }: { users: UserRow[]; selfId: string | null }) {
  const router = useRouter();
  const [resetting, setResetting] = useState<UserRow | null>(null);
  const change = useConfirmedChange((proposed: Pending) =>
    proposed.kind === "role"
      ? changeUserRoleAction({ userId: proposed.user.id, role: proposed.role })
      : setUserDisabledAction({ userId: proposed.user.id, disabled: proposed.kind === "disable" }),
  );
  const confirming = change.subject;

  return (
    <>
      <table className={`${styles.table} stack-on-phone`} data-testid="users-table">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Role</th>
            <th scope="col">State</th>
            <th scope="col">Created</th>
            <th scope="col">Actions</th>
          </tr>
        </thead>
        <tbody>
          {users.map((user) => (
            <tr key={user.id} data-testid={`user-${user.name}`}>
              <td data-label="Name">
                {user.name}
                {user.id === selfId && <span className="muted"> (you)</span>}
              </td>
              <td data-label="Role">
                <select
                  className="control"
                  aria-label={`Role of ${user.name}`}
                  value={user.role}
                  disabled={change.pending}
                  onChange={(event) =>
                    change.ask({ kind: "role", user, role: event.target.value as Role })
                  }
                >
                  <RoleOptions />
                </select>
              </td>
              <td data-label="State">{user.disabled ? "disabled" : "enabled"}</td>
              <td data-label="Created">{formatUtc(user.createdAt)}</td>
              <td>
                <div className={styles.rowActions}>
                  <button
                    type="button"
                    className="button"
                    onClick={() => setResetting(user)}
                    aria-label={`Reset the password of ${user.name}`}
                  >
                    Reset password
                  </button>
                  {user.id !== selfId && (
                    <button
                      type="button"
                      className={user.disabled ? "button" : "button button-danger"}
                      onClick={() =>
                        change.ask({ kind: user.disabled ? "enable" : "disable", user })
                      }
                      aria-label={`${user.disabled ? "Enable" : "Disable"} ${user.name}`}
                    >
                      {user.disabled ? "Enable" : "Disable"}
                    </button>
                  )}
                </div>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <ConfirmDialog
        open={confirming !== null}
        title={confirmTitle(confirming)}
        confirmLabel={confirmTitle(confirming)}
        pending={change.pending}
        error={change.error}
        onConfirm={change.confirm}
        onCancel={change.cancel}
        testId="user-change-dialog"
      >
        <p>{confirming && consequence(confirming)}</p>
      </ConfirmDialog>
      {resetting && (
        <ResetPasswordDialog
          user={resetting}
          onDone={() => {
            setResetting(null);
            router.refresh();
          }}
        />
      )}
    </>
  );
}

function confirmTitle(change: Pending | null): string {
  if (!change) return "";
  if (change.kind === "role") return `Make ${change.user.name} ${article(change.role)}`;
  return `${change.kind === "disable" ? "Disable" : "Enable"} ${change.user.name}`;
}

const article = (role: Role) => (role === "admin" ? "an admin" : `an ${role}`);

/** Exactly what the confirmed change does, in the words of the roles table. */
function consequence(change: Pending): string {
  const name = change.user.name;
  if (change.kind === "disable") {
    return `${name} is signed out everywhere at once, cannot sign in, and their API tokens stop working until an admin enables the account again.`;
  }
  if (change.kind === "enable") {
    return `${name} can sign in again with their current password; their unrevoked API tokens work again.`;
  }
  const can: Record<Role, string> = {
    viewer: "sees hosts, runs, logs and the catalog, and cannot change anything",
    operator: "can also add hosts, retry, abort and re-onboard runs, and read the audit log",
    admin: "can do everything, including managing users, tokens and the catalog",
  };
  return `${name} goes from ${change.user.role} to ${change.role}: from their next click on, ${name} ${can[change.role]}.`;
}

const RESET_FIELDS = ["password"] as const;

function ResetPasswordDialog({ user, onDone }: { user: UserRow; onDone: () => void }) {
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    resetUserPasswordAction,
    RESET_FIELDS,
  );
  const dialogRef = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialogRef.current?.showModal();
  }, []);
  useEffect(() => {
    if (state?.ok) onDone();
  }, [state, onDone]);
  return (
    <dialog
      ref={dialogRef}
      className="dialog"
      aria-labelledby="reset-title"
      onCancel={(event) => {
        event.preventDefault();
        if (!pending) onDone();
      }}
      data-testid="reset-password-dialog"
    >
      <h2 id="reset-title">Reset the password of {user.name}</h2>
      <p>
        {user.name} is signed out everywhere and signs in with this password from now on. Tell them
        over a channel you trust; they can change it on their account page.
      </p>
      <form {...formProps}>
        {formError}
        <input type="hidden" name="userId" value={user.id} />
        <NewPasswordField
          name="password"
          label="New password"
          error={errorOf("password")}
          autoFocus
        />
        <div className="dialog-actions">
          <button type="button" className="button" onClick={onDone} disabled={pending}>
            Cancel
          </button>
          <button type="submit" className="button button-danger" disabled={pending}>
            {pending ? "Working…" : "Set new password"}
          </button>
        </div>
      </form>
    </dialog>
  );
}
