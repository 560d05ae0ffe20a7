import type { Metadata } from "next";
import { redirect } from "next/navigation";
import { SignInForm } from "@/components/sign-in-form";
import { safeNextPath } from "@/lib/auth/request-context";
import { setupOpen } from "@/lib/auth/setup";
import { currentActor } from "@/lib/auth/actor";
import { getDb } from "@/lib/db/client";

export const dynamic = "force-dynamic";
export const metadata: Metadata = { title: "Sign in" };

export default async function LoginPage({
  searchParams,
}: {
  searchParams: Promise<{ next?: string | string[] }>;
}) {
  const { next } = await searchParams;
  const nextPath = typeof next === "string" ? safeNextPath(next) : undefined;
  if (await setupOpen(getDb())) redirect("/setup");
  const signedIn = await currentActor("viewer").catch(() => null);
  if (signedIn) redirect(nextPath ?? "/hosts");
  return (
    <>
      <h1>Sign in</h1>
      <SignInForm next={nextPath} />
    </>
  );
}
