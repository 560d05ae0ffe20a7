import Link from "next/link";

/** On an event log row: the targets its notification has not reached (yet), in red. */
export function EventNotificationMark({ failedTo }: { failedTo: readonly string[] }) {
  if (failedTo.length === 0) return null;
  return (
    <div className="field-error small" data-testid="event-notification-failed">
      Notification not delivered to {failedTo.join(", ")} —{" "}
      <Link href="/power/notifications">notifications</Link>
    </div>
  );
}
