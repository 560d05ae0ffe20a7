import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { SetupForm } from "@/components/setup-form";
import { setupOpen } from "@/lib/auth/setup";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "First start" };

/** Exists only while the console has no user; afterwards it sends people to sign in. */
export default async function SetupPage() {
  if (!(await setupOpen(getDb()))) redirect("/login");
  return (
    <>
      <h1>First start</h1>
      <p className="lead">
        Create the first admin. You need the setup token <code>npm start</code> printed in its
        terminal; it works once.
      </p>
      <SetupForm />
    </>
  );
}
