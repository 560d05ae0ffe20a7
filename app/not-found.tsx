import Link from "next/link";

export default function NotFound() {
  return (
    <main className="main">
      <h1>Not found</h1>
      <p>
        Nothing lives at this address. <Link href="/hosts">Go to the hosts</Link>.
      </p>
    </main>
  );
}
