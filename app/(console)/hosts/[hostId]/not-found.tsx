import Link from "next/link";

export default function HostNotFound() {
  return (
    <>
      <h1>No such host</h1>
      <p>
        There is no host with this id; it may have been removed, or the link is incomplete.{" "}
        <Link href="/hosts">Back to the hosts</Link>.
      </p>
    </>
  );
}
