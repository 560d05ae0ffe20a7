"use client";

/** Shown when a page could not load its data (e.g. the database is unreachable). */
export default function ConsoleError({ reset }: { error: Error; reset: () => void }) {
  return (
    <div className="notice notice-error" role="alert">
      <h1>This page could not load</h1>
      <p>
        The console could not read its data. If the database was restarting, trying again usually
        helps; otherwise the server log says more.
      </p>
      <button type="button" className="button" onClick={reset}>
        Try again
      </button>
    </div>
  );
}
