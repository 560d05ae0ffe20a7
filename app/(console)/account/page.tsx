import type { Metadata } from "next";
import { CreateTokenForm, TokenTable } from "@/components/api-tokens-panel";
import styles from "@/components/auth.module.css";
import { ChangePasswordForm } from "@/components/change-password-form";
import { SessionsPanel } from "@/components/sessions-panel";
import { tokenRows } from "@/components/token-rows";
import { requirePageActor } from "@/lib/auth/actor";
import { listApiTokens } from "@/lib/auth/api-tokens";
import { describeBrowser } from "@/lib/auth/describe-browser";
import { sessionCookieToken } from "@/lib/auth/request-context";
import { listUserSessions } from "@/lib/auth/session";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Your account" };

export default async function AccountPage() {
  const actor = await requirePageActor("viewer", "/account");
  const tokens = actor.userId ? await listApiTokens(getDb(), actor.userId) : [];
  const sessions = actor.userId
    ? await listUserSessions(getDb(), actor.userId, await sessionCookieToken())
    : [];
  return (
    <>
      <h1>Your account</h1>
      <p className="lead">
        Signed in as <strong>{actor.name}</strong> with the <strong>{actor.role}</strong> role.
      </p>
      <section className={styles.section} aria-labelledby="password-heading">
        <h2 id="password-heading">Password</h2>
        <ChangePasswordForm />
      </section>
      <section className={styles.section} aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Signed-in browsers</h2>
        <SessionsPanel
          userName={actor.name}
          sessions={sessions.map((session) => ({
            browser: describeBrowser(session.userAgent),
            address: session.address,
            createdAt: session.createdAt.toISOString(),
            lastSeenAt: session.lastSeenAt.toISOString(),
            endsAt: session.endsAt.toISOString(),
            current: session.current,
          }))}
        />
      </section>
      <section className={styles.section} aria-labelledby="tokens-heading">
        <h2 id="tokens-heading">API tokens</h2>
        <p>For scripts and automation: a token acts with your role ({actor.role}) until revoked.</p>
        <CreateTokenForm />
        <TokenTable tokens={tokenRows(tokens)} showOwner={false} />
      </section>
    </>
  );
}
