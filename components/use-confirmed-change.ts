"use client";

import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import type { ActionResult } from "@/lib/actions/action-result";

/**
 * A change to a row of a server-rendered list that is confirmed in a dialog first: `ask` opens
 * the dialog for a subject, `confirm` runs `change` on it. Success closes the dialog and
 * refreshes the list; a refusal stays in the dialog as its error, so the admin can cancel.
 */
export function useConfirmedChange<T>(change: (subject: T) => Promise<ActionResult>) {
  const router = useRouter();
  const [subject, setSubject] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();

  const confirm = () => {
    if (subject === null) return;
    startTransition(async () => {
      setError(null);
      const result = await change(subject);
      if (result.ok) {
        setSubject(null);
        router.refresh();
      } else {
        setError(result.message);
      }
    });
  };

  return {
    subject,
    error,
    pending,
    /** Opens the dialog for `next`, without the previous attempt's error. */
    ask: (next: T) => {
      setError(null);
      setSubject(next);
    },
    cancel: () => setSubject(null),
    confirm,
  };
}
