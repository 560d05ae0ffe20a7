import type { FaultCount } from "./chaos";
import type { Verdict } from "./invariants";
import type { ActionCount } from "./load";

export type TableRow = [what: string, result: string, detail: string];

/** The soak's one table: faults injected, the load it carried, then every invariant. */
export function soakRows(
  faults: ReadonlyMap<string, FaultCount>,
  /** What the faults did, as the lab counted it (SSH commands cut, …). */
  effects: readonly TableRow[],
  load: ReadonlyMap<string, ActionCount>,
  verdicts: readonly Verdict[],
): TableRow[] {
  const rows: TableRow[] = [];
  for (const [fault, count] of faults) {
    rows.push([
      `fault: ${fault}`,
      `injected ×${count.injected}`,
      count.skipped ? `${count.skipped} not injected (${[...count.reasons].join("; ")})` : "",
    ]);
  }
  rows.push(...effects);
  for (const [action, count] of load) {
    const other = [
      count.refused && `refused ×${count.refused}`,
      count.unavailable && `503 ×${count.unavailable}`,
      count.unanswered && `unanswered ×${count.unanswered}`,
      count.noTarget && `no target ×${count.noTarget}`,
    ].filter(Boolean);
    rows.push([`load: ${action}`, `done ×${count.done}`, other.join(", ")]);
  }
  for (const verdict of verdicts) {
    rows.push([verdict.invariant, verdict.held ? "held" : "BROKEN", verdict.detail]);
  }
  return rows;
}

/** A Markdown table with padded columns (as Prettier writes it), ready for docs/soak.md. */
export function markdownTable(header: TableRow, rows: readonly TableRow[]): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => cell.replaceAll("|", "\\|")));
  const widths = header.map((_, i) => Math.max(3, ...cells.map((row) => row[i]!.length)));
  const line = (row: string[]) =>
    `| ${row.map((cell, i) => cell.padEnd(widths[i]!)).join(" | ")} |`;
  return [
    line(cells[0]!),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...cells.slice(1).map(line),
  ].join("\n");
}
