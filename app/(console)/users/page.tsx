import type { Metadata } from "next";
import { TokenTable } from "@/components/api-tokens-panel";
import styles from "@/components/auth.module.css";
import { tokenRows } from "@/components/token-rows";
import { CreateUserForm, UsersTable } from "@/components/users-admin";
import { requirePageActor } from "@/lib/auth/actor";
import { listApiTokens } from "@/lib/auth/api-tokens";
import { listUsers } from "@/lib/auth/users";
import { getDb } from "@/lib/db/client";
import { ListLiveRefresh } from "@/components/list-live-refresh";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Users" };

/** Admin only: who can sign in, with which role, and every API token in the console. */
export default async function UsersPage() {
  const actor = await requirePageActor("admin", "/users");
  const db = getDb();
  const [users, tokens] = await Promise.all([listUsers(db), listApiTokens(db, null)]);
  return (
    <>
      <ListLiveRefresh list="users" />
      <h1>Users</h1>
      <p className="lead">
        Viewers read; operators also add hosts, retry and abort; admins also manage users, tokens
        and the catalog. The last enabled admin cannot be demoted or disabled.
      </p>
      <UsersTable
        users={users.map((user) => ({
          id: user.id,
          name: user.name,
          role: user.role,
          disabled: user.disabled,
          createdAt: user.createdAt.toISOString(),
        }))}
        selfId={actor.userId}
      />
      <section className={styles.section} aria-labelledby="create-user-heading">
        <h2 id="create-user-heading">Add a user</h2>
        <CreateUserForm />
      </section>
      <section className={styles.section} aria-labelledby="all-tokens-heading">
        <h2 id="all-tokens-heading">All API tokens</h2>
        <TokenTable tokens={tokenRows(tokens)} showOwner />
      </section>
    </>
  );
}
