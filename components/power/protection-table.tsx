"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import type { TargetProtection } from "@/lib/power/queries/target-protection";
import { formatDateTime } from "../format";
import { useFallbackRefetchInterval } from "../live-provider";
import { fetchJson } from "../queries";
import { powerKeys } from "./power-keys";
import styles from "./power.module.css";

const POLICY = {
  any: "any feed failing",
  all: "all feeds failing (redundant power supplies)",
} as const;

const ANSWER = { yes: "✓ yes", no: "✕ no", unknown: "? not known" } as const;

/** Each protected target: what feeds it, when it goes, and whether its token can shut it down. */
export function ProtectionTable({ initial }: { initial: TargetProtection[] }) {
  const refetchInterval = useFallbackRefetchInterval();
  const { data: targets } = useQuery({
    queryKey: powerKeys.protection,
    queryFn: async () =>
      (await fetchJson<{ targets: TargetProtection[] }>("/api/power/targets")).targets,
    initialData: initial,
    refetchInterval,
  });
  const pbs = targets.some((target) => target.kind === "pbs");
  return (
    <section className="panel" aria-labelledby="protection-heading">
      <h2 id="protection-heading">Protected targets</h2>
      {targets.length === 0 ? (
        <p className="muted" data-testid="protection-empty">
          No target is protected: a power failure shuts nothing down.
        </p>
      ) : (
        <table className={`${styles.table} stack-on-phone`} data-testid="protection-table">
          <thead>
            <tr>
              <th scope="col">Target</th>
              <th scope="col">Fed by</th>
              <th scope="col">Goes down on</th>
              <th scope="col">Stage</th>
              <th scope="col">Token can shut it down</th>
            </tr>
          </thead>
          <tbody>
            {targets.map((target) => (
              <tr
                key={target.id}
                data-testid={`protection-${target.name}`}
                data-token={target.token.answer}
              >
                <th scope="row">
                  {target.hostId ? (
                    <Link href={`/hosts/${target.hostId}`}>{target.name}</Link>
                  ) : (
                    target.name
                  )}
                  <div className="muted small">
                    {target.kind === "pbs" ? "Proxmox Backup Server" : "Proxmox VE node"}
                    {target.address && (
                      <>
                        {" · "}
                        <span className="mono">
                          {target.address}:{target.port}
                        </span>
                      </>
                    )}
                  </div>
                  {target.runsConsole && (
                    <div className="small" data-testid="runs-console">
                      <strong>runs the console</strong> — shut down last
                    </div>
                  )}
                  {!target.enabled && <div className="small">turned off: never shut down</div>}
                  {target.problem && (
                    <div className="small notice-error" data-testid="target-problem">
                      cannot be called: {target.problem}
                    </div>
                  )}
                </th>
                <td data-label="Fed by">
                  {target.feeds.length === 0 ? (
                    <span className="notice-warning">no feed: never shut down</span>
                  ) : (
                    target.feeds.map((feed) => feed.upsName).join(", ")
                  )}
                </td>
                <td data-label="Goes down on">{POLICY[target.feedPolicy]}</td>
                <td data-label="Stage">
                  {target.runsConsole ? `${target.stage}, then last` : target.stage}
                </td>
                <td data-label="Token can shut it down">
                  <span className={styles[`answer-${target.token.answer}`]}>
                    {ANSWER[target.token.answer]}
                  </span>
                  <div className="muted small">
                    {target.token.reason}
                    {target.token.asOf && (
                      <>
                        {" "}
                        (
                        <time dateTime={target.token.asOf} suppressHydrationWarning>
                          {formatDateTime(target.token.asOf)}
                        </time>
                        )
                      </>
                    )}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {pbs && <PbsWarning />}
    </section>
  );
}

/** Said wherever a backup server is a target: its token can do far more than shut it down. */
export function PbsWarning() {
  return (
    <p className="notice notice-warning small" data-testid="pbs-warning">
      A Proxmox Backup Server has no power-only role: its shutdown token holds Admin on
      /system/status. Whoever controls the console then controls both the production hosts and their
      backups — keep the console&apos;s access tight, or leave the backup server off this list.
    </p>
  );
}
