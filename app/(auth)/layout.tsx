import type { ReactNode } from "react";
import styles from "@/components/auth.module.css";

/** Pages for people who are not signed in yet: no navigation, no live stream. */
export default function AuthLayout({ children }: { children: ReactNode }) {
  return (
    <main id="main" className="main">
      <div className={styles.card}>
        <p className={styles.brand}>CluPilot</p>
        {children}
      </div>
    </main>
  );
}
