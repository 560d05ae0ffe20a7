"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { PowerModeView } from "@/lib/power/queries/power-settings";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

/**
 * On every console page: the power mode. Dry-run is a calm line (nothing is ever sent); armed is
 * a banner nobody can miss, saying who armed it and when. Follows the live stream, so arming in
 * one tab shows in every other at once.
 */
export function PowerModeBanner({ initialMode }: { initialMode: PowerModeView }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data: mode } = useQuery({
    queryKey: powerKeys.mode,
    queryFn: () => fetchJson<PowerModeView>("/api/power/mode"),
    initialData: initialMode,
    refetchInterval,
  });

  if (mode.mode === "armed") {
    return (
      <div className={styles.modeArmed} role="status" data-testid="power-mode" data-mode="armed">
        <span className={styles.modeWord}>⚡ POWER PROTECTION ARMED</span>
        <span>
          When a UPS trigger fires, the console shuts the protected hosts down for real.
          {mode.armedBy && (
            <>
              {" "}
              Armed by {mode.armedBy}
              {mode.armedAt && (
                <>
                  {" "}
                  on{" "}
                  <time dateTime={mode.armedAt} suppressHydrationWarning>
                    {formatDateTime(mode.armedAt)}
                  </time>
                </>
              )}
              .
            </>
          )}
        </span>
        <Link href="/power#plan">See the plan</Link>
      </div>
    );
  }
  return (
    <p className={styles.modeCalm} data-testid="power-mode" data-mode="dry-run">
      <span>
        Power: <strong>dry-run</strong> — the console only logs what it would shut down; nothing is
        sent.
      </span>
      <Link href="/power">Power</Link>
    </p>
  );
}
