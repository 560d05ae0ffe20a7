"use client";

import { useState, useTransition } from "react";
import { askHostForBmcAction } from "@/lib/actions/power-controller";
import type { BmcReport } from "@/lib/power-controllers/bmc-report";

/**
 * "Ask the host": what the host's own BMC reports (`ipmitool lan print` over its pinned SSH
 * key), offered as a suggestion for the address field — filled in only when the admin says
 * so, never saved by asking.
 */
export function BmcSuggestion({
  hostId,
  onUse,
}: {
  hostId: string;
  onUse: (address: string) => void;
}) {
  const [report, setReport] = useState<BmcReport | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [pending, startTransition] = useTransition();
  const ask = () =>
    startTransition(async () => {
      setProblem(null);
      setReport(null);
      const answer = await askHostForBmcAction({ hostId });
      if (answer.ok) setReport(answer.report);
      else setProblem(answer.message);
    });
  return (
    <div className="bmc-suggestion">
      <button
        type="button"
        className="button"
        onClick={ask}
        disabled={pending}
        data-testid="power-controller-ask-host"
      >
        {pending ? "Asking the host…" : "Ask the host for its BMC address"}
      </button>
      {problem && (
        <p className="field-hint bmc-warn" role="alert" data-testid="power-controller-bmc-report">
          {problem}
        </p>
      )}
      {report?.kind === "found" && (
        <p className="field-hint" data-testid="power-controller-bmc-report">
          The host reports its BMC at <span className="mono">{report.address}</span>
          {detailsOf(report)} — from ipmitool lan print on the host. Check that the console can
          reach that network.{" "}
          <button
            type="button"
            className="button"
            onClick={() => onUse(report.address)}
            data-testid="power-controller-use-bmc"
          >
            Use {report.address}
          </button>
        </p>
      )}
      {report && report.kind !== "found" && (
        <p className="field-hint bmc-warn" data-testid="power-controller-bmc-report">
          {report.detail}
        </p>
      )}
    </div>
  );
}

/** ` (static address, MAC …)`, or nothing when the BMC said neither. */
function detailsOf(report: Extract<BmcReport, { kind: "found" }>): string {
  const details = [
    report.addressSource?.toLowerCase(),
    report.mac ? `MAC ${report.mac}` : null,
  ].filter(Boolean);
  return details.length > 0 ? ` (${details.join(", ")})` : "";
}
