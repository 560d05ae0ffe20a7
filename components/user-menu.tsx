import Link from "next/link";
import type { Actor } from "@/lib/auth/actor";
import { signOutAction } from "@/lib/actions/sign-out";
import styles from "./auth.module.css";

/** Who is signed in, with which role, and the way out. */
export function UserMenu({ actor }: { actor: Actor }) {
  return (
    <div className={styles.userBox} data-testid="user-menu">
      <Link href="/account" data-testid="signed-in-user">
        {actor.name}
      </Link>
      <span className={styles.role} data-testid="signed-in-role">
        {actor.role}
      </span>
      <form action={signOutAction}>
        <button type="submit" className="button" data-testid="sign-out">
          Sign out
        </button>
      </form>
    </div>
  );
}
