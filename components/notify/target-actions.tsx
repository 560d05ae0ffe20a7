"use client";

import { useQueryClient } from "@tanstack/react-query";
import { useRouter } from "next/navigation";
import { useState, useTransition } from "react";
import { acknowledgeNotificationFailuresAction } from "@/lib/actions/notify/acknowledge-notification-failures";
import { deleteNotificationTargetAction } from "@/lib/actions/notify/delete-notification-target";
import { testNotificationTargetAction } from "@/lib/actions/notify/test-notification-target";
import { ConfirmedAction, useConfirmedAction } from "../confirmed-action";
import { notifyKeys } from "./notify-keys";

/** Sends a real test message and says what the target's service answered. */
export function TestTargetButton({ targetId }: { targetId: string }) {
  const queryClient = useQueryClient();
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [pending, startTransition] = useTransition();
  const test = () =>
    startTransition(async () => {
      setResult(null);
      const answer = await testNotificationTargetAction({ id: targetId });
      // The card's "Last delivery" names the test (it reads it from the audit log).
      await queryClient.invalidateQueries({ queryKey: notifyKeys.cards });
      if (!answer.ok) return setResult({ ok: false, text: answer.message });
      const { outcome } = answer;
      setResult(
        outcome.ok
          ? { ok: true, text: `Delivered: the target answered HTTP ${outcome.status}.` }
          : { ok: false, text: `Not delivered: it ${outcome.error}.` },
      );
    });
  return (
    <>
      <button
        type="button"
        className="button"
        onClick={test}
        disabled={pending}
        data-testid={`notify-test-${targetId}`}
      >
        {pending ? "Sending…" : "Test"}
      </button>
      {result && (
        <p
          className={result.ok ? "muted small" : "field-error"}
          role="status"
          data-testid={`notify-test-result-${targetId}`}
        >
          {result.text}
        </p>
      )}
    </>
  );
}

/** Acknowledges a target's failing deliveries: they leave the dashboard and stop retrying. */
export function AcknowledgeFailuresButton({ targetId }: { targetId: string }) {
  const queryClient = useQueryClient();
  const acknowledge = useConfirmedAction(
    () => acknowledgeNotificationFailuresAction({ targetId }),
    {
      onSettled: async () => {
        await queryClient.invalidateQueries({ queryKey: notifyKeys.cards });
        await queryClient.invalidateQueries({ queryKey: notifyKeys.failing });
      },
    },
  );
  return (
    <ConfirmedAction
      state={acknowledge}
      label="Acknowledge failures"
      pendingLabel="Acknowledging…"
      testId={`notify-acknowledge-${targetId}`}
    />
  );
}

export function DeleteTargetButton({ targetId, name }: { targetId: string; name: string }) {
  const router = useRouter();
  const queryClient = useQueryClient();
  const remove = useConfirmedAction(() => deleteNotificationTargetAction({ id: targetId }), {
    onSuccess: async () => {
      await queryClient.invalidateQueries({ queryKey: notifyKeys.cards });
      router.refresh();
    },
  });
  return (
    <ConfirmedAction
      state={remove}
      label="Remove"
      className="button button-danger"
      testId={`notify-delete-${targetId}`}
      confirm={{
        title: `Remove notification target ${name}`,
        confirmLabel: `Remove ${name}`,
        testId: `notify-delete-${targetId}-dialog`,
        body: (
          <p>
            {name} gets no more notifications; its delivery history goes with it. Messages not yet
            delivered to it are dropped.
          </p>
        ),
      }}
    />
  );
}
