import type { Metadata } from "next";
import Link from "next/link";
import { ZRole } from "@/lib/roles";

export const metadata: Metadata = { title: "Not allowed" };

/** Where a signed-in user lands on a page their role may not see. */
export default async function ForbiddenPage({
  searchParams,
}: {
  searchParams: Promise<{ need?: string | string[] }>;
}) {
  const need = ZRole.safeParse((await searchParams).need);
  return (
    <>
      <h1>Not allowed</h1>
      <p>
        {need.success
          ? `That page needs the ${need.data} role. `
          : "Your role cannot open that page. "}
        Ask an admin if you need it.
      </p>
      <p>
        <Link href="/hosts">Go to the hosts</Link>
      </p>
    </>
  );
}
