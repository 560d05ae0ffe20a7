import { describe, expect, it } from "vitest";
import {
  buildRows,
  defaultOpen,
  displayText,
  LogModel,
  searchLines,
  type IncomingChunk,
} from "./model";

const chunk = (
  seq: number,
  step: string,
  firstLine: number,
  lines: string[],
  kind: IncomingChunk["kind"] = "output",
): IncomingChunk => ({
  seq,
  step,
  kind,
  at: "2026-01-01T00:00:00.000Z",
  firstLine,
  lines,
});

function model() {
  const m = new LogModel();
  m.append(chunk(1, "ConnectHost", 1, ["▶ ConnectHost $ id -u"], "command"));
  m.append(chunk(2, "ConnectHost", 2, ["0"]));
  m.append(chunk(3, "CheckOs", 3, ["\u001b[31mError\u001b[0m: bookworm", "more"]));
  m.append(chunk(4, "CheckOs", 5, ["◀ exit 1 in 3 ms"], "result"));
  return m;
}

describe("the viewer's log model", () => {
  it("groups lines into sections per step and ignores duplicate chunks", () => {
    const m = model();
    expect(m.append(chunk(2, "ConnectHost", 2, ["0"]))).toBe(false);
    expect(m.sections.map((s) => [s.step, s.start, s.end, s.failed])).toEqual([
      ["ConnectHost", 0, 2, false],
      ["CheckOs", 2, 5, true],
    ]);
    expect(m.lines[2]!.plain).toBe("Error: bookworm");
    expect(m.indexOfLine(4)).toBe(3);
    expect(m.indexOfLine(99)).toBe(-1);
  });

  it("opens every section while running, only the failing one after a failure, none after success", () => {
    const m = model();
    const rows = (status: "running" | "failed" | "succeeded") =>
      Array.from(buildRows(m.sections, defaultOpen(m.sections, status, "CheckOs")));
    expect(rows("running")).toEqual([-1, 0, 1, -2, 2, 3, 4]);
    expect(rows("failed")).toEqual([-1, -2, 2, 3, 4]);
    expect(rows("succeeded")).toEqual([-1, -2]);
  });

  it("searches the text without colours, across closed sections too", () => {
    const m = model();
    expect(searchLines(m.lines, "error")).toEqual([{ line: 2, start: 0, end: 5 }]);
    expect(searchLines(m.lines, "O")).toHaveLength(7);
  });
});

describe("an aborted run's section", () => {
  it("is aborted, not failed, even where the abort killed a command", () => {
    const m = new LogModel();
    const at = "2025-01-01T00:00:00.000Z";
    m.append({
      seq: 1,
      step: "ConfigureProxmox",
      kind: "command",
      at,
      firstLine: 1,
      lines: ["▶ ConfigureProxmox 00:00:00.000Z $ sleep 600"],
    });
    m.append({
      seq: 2,
      step: "ConfigureProxmox",
      kind: "result",
      at,
      firstLine: 2,
      lines: ["◀ killed by SIGTERM in 3 s"],
    });
    m.append({
      seq: 3,
      step: "ConfigureProxmox",
      kind: "run",
      at,
      firstLine: 3,
      lines: ["■ run aborted by operator during ConfigureProxmox"],
    });
    expect(m.sections[0]).toMatchObject({ aborted: true });
    const failed = new LogModel();
    failed.append({
      seq: 1,
      step: "Check",
      kind: "run",
      at,
      firstLine: 1,
      lines: ["■ run failed at Check: boom"],
    });
    expect(failed.sections[0]).toMatchObject({ failed: true, aborted: false });
  });
});

describe("the console's own status scripts", () => {
  it("show as what they do, not as shell; everything else as it is", () => {
    const script =
      "▶ InstallProxmoxVe 12:00:01.234Z $ wd=/var/lib/clupilot/jobs/x ⏎ clupilot_sig() { ⏎ key= ⏎ } ⏎ printf 'clupilot-watch-signature:%s\\n' \"$sum\"";
    expect(displayText({ kind: "command", text: script })).toBe(
      "▶ InstallProxmoxVe 12:00:01.234Z $ (reads the job's status on the host — the console's own script, in full in the raw log)",
    );
    expect(displayText({ kind: "command", text: "▶ X 12:00:01.234Z $ apt-get update" })).toBe(
      "▶ X 12:00:01.234Z $ apt-get update",
    );
    expect(displayText({ kind: "output", text: "clupilot-watch is a word here" })).toBe(
      "clupilot-watch is a word here",
    );
  });
});
