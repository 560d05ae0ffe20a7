/*
 * What releasing a UPS's latch by hand does while the UPS is (last seen) on battery, in the
 * words both the confirmation dialog and the API's refusal use (issue 29, item 15): the trigger
 * fires again with the next reading and its targets are shut down a second time — a host an
 * operator has just powered back on included. Pure, so the page and the server say the same.
 */

/** The UPS as the latch release sees it. */
export type LatchReleaseState = {
  upsName: string;
  /** The monitor's last reliable reading; null when it never had one. */
  reading: { onBattery: boolean; rawStatus: string; chargePercent: number | null } | null;
  /** False while the UPS gives no reliable reading (the reading above is the last one). */
  readingIsCurrent: boolean;
  mode: "dry-run" | "armed";
  /** What this UPS's trigger would shut down now, in order; null when not known here. */
  targets: readonly string[] | null;
};

/** On battery as the monitor last saw it: then its triggers can fire again once released. */
export function releaseIsDuringOutage(state: Pick<LatchReleaseState, "reading">): boolean {
  return state.reading?.onBattery === true;
}

/** `OB LB, 12 %`: the UPS's own status words and its charge. */
export function outageReadingWords(reading: NonNullable<LatchReleaseState["reading"]>): string {
  const charge = reading.chargePercent === null ? "" : `, ${Math.round(reading.chargePercent)} %`;
  return `${reading.rawStatus}${charge}`;
}

function names(list: readonly string[]): string {
  if (list.length <= 1) return list.join("");
  return `${list.slice(0, -1).join(", ")} and ${list.at(-1)}`;
}

/**
 * The warning for a release during an outage, or null when the UPS is not (last seen) on
 * battery: `UPS ups1 is still on battery (OB LB, 12 %): releasing the latch lets the trigger
 * fire again within seconds and shut down pve1 and pve2 again.`
 */
export function releaseDuringOutageWarning(state: LatchReleaseState): string | null {
  const { reading } = state;
  if (reading === null || !releaseIsDuringOutage(state)) return null;
  const where = state.readingIsCurrent
    ? `UPS ${state.upsName} is still on battery (${outageReadingWords(reading)})`
    : `UPS ${state.upsName} was last seen on battery (${outageReadingWords(reading)}) and gives no reliable reading now`;
  const fires = state.readingIsCurrent
    ? "lets the trigger fire again within seconds"
    : "lets the trigger fire again as soon as it reads on battery again (or its lost-contact trigger, if set, runs out)";
  const targets = state.targets;
  let what: string;
  if (targets !== null && targets.length === 0) {
    what = "— it feeds no target now, so nothing would be shut down";
  } else {
    const list = targets === null ? "the targets it feeds" : names(targets);
    what =
      state.mode === "armed"
        ? `and shut down ${list} again`
        : `and start another dry-run shutdown of ${list} (dry-run: nothing is really shut down)`;
  }
  return `${where}: releasing the latch ${fires} ${what}.`;
}
