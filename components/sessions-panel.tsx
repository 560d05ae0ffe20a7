"use client";

import { signOutOtherSessionsAction } from "@/lib/actions/sign-out-other-sessions";
import styles from "./auth.module.css";
import { formatUtc } from "./catalog-format";
import { ConfirmDialog } from "./confirm-dialog";
import { useConfirmedChange } from "./use-confirmed-change";

/** A session as the account page lists it (dates as ISO strings for the client). */
export type SessionRow = {
  /** "Chrome 142 on Linux" (lib/auth/describe-browser.ts), or null when nothing was recorded. */
  browser: string | null;
  address: string | null;
  createdAt: string;
  lastSeenAt: string;
  endsAt: string;
  current: boolean;
};

/** The user's signed-in browsers, and "Sign out everywhere else" behind a confirmation. */
export function SessionsPanel({
  sessions,
  userName,
}: {
  sessions: SessionRow[];
  userName: string;
}) {
  const others = sessions.filter((session) => !session.current).length;
  const signOut = useConfirmedChange((_count: number) => signOutOtherSessionsAction());

  return (
    <>
      <table className={`${styles.table} stack-on-phone`} data-testid="session-table">
        <thead>
          <tr>
            <th scope="col">Browser</th>
            <th scope="col">From</th>
            <th scope="col">Signed in</th>
            <th scope="col">Last active</th>
            <th scope="col">Ends at the latest</th>
          </tr>
        </thead>
        <tbody>
          {sessions.map((session) => (
            <tr key={`${session.createdAt}-${session.lastSeenAt}`}>
              <td>
                {session.browser ?? <span className="muted">not recorded</span>}
                {session.current && <strong> (this one)</strong>}
              </td>
              <td className="mono" data-label="From">
                {session.address ?? "—"}
              </td>
              <td data-label="Signed in">{formatUtc(session.createdAt)}</td>
              <td data-label="Last active">{formatUtc(session.lastSeenAt)}</td>
              <td data-label="Ends at the latest">{formatUtc(session.endsAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p>
        <button
          type="button"
          className="button button-danger"
          disabled={others === 0}
          onClick={() => signOut.ask(others)}
          data-testid="sign-out-others"
        >
          Sign out everywhere else
        </button>{" "}
        {others === 0 && <span className="muted">No other browser is signed in.</span>}
      </p>
      <ConfirmDialog
        open={signOut.subject !== null}
        title="Sign out everywhere else"
        confirmLabel={`End ${signOut.subject ?? others} other session${(signOut.subject ?? others) === 1 ? "" : "s"}`}
        pending={signOut.pending}
        error={signOut.error}
        onConfirm={signOut.confirm}
        onCancel={signOut.cancel}
        testId="sign-out-others-dialog"
      >
        <p>
          Ends {signOut.subject} other session{signOut.subject === 1 ? "" : "s"} of{" "}
          <strong>{userName}</strong>: pages open there go to the sign-in page at once. This browser
          stays signed in. Your API tokens are not affected; revoke them below if they may be in the
          wrong hands too.
        </p>
      </ConfirmDialog>
    </>
  );
}
