"use client";

import { useId, useRef, useState } from "react";
import styles from "./console-key.module.css";

/**
 * A read-only text (a public key, a command) with a Copy button. The clipboard API needs a
 * secure context (https or localhost); on plain http the text is selected and copied the old
 * way, and if that fails too it stays selected for Ctrl+C.
 */
export function CopyField({
  label,
  value,
  rows = 2,
  testId,
}: {
  label: string;
  value: string;
  rows?: number;
  testId: string;
}) {
  const id = useId();
  const textRef = useRef<HTMLTextAreaElement>(null);
  const [status, setStatus] = useState("");

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setStatus("Copied");
      return;
    } catch {
      // not a secure context, or permission refused: fall back to the selection
    }
    const text = textRef.current;
    text?.focus();
    text?.select();
    const copied = document.execCommand?.("copy") ?? false;
    setStatus(copied ? "Copied" : "Selected: press Ctrl+C");
  };

  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <div className={styles.copyBlock}>
        <textarea
          id={id}
          ref={textRef}
          className={styles.copyText}
          value={value}
          rows={rows}
          readOnly
          spellCheck={false}
          onFocus={(event) => event.currentTarget.select()}
          data-testid={testId}
        />
        <button type="button" className="button" onClick={() => void copy()}>
          Copy
        </button>
        <span className={styles.copied} role="status" aria-live="polite">
          {status}
        </span>
      </div>
    </div>
  );
}
