import type { LabNode } from "../index";
import type { LabUps } from "./lab-ups";

/**
 * Lab nodes plugged into a lab UPS's output: when the output goes off, every node still up
 * loses power at once (nothing shut down cleanly); when it comes on again, a node whose BIOS
 * restores power after AC loss boots, the others stay off — exactly what a host on a real UPS
 * does after `shutdown.return`. Every change is logged per node.
 */

export type LabFeedEvent = { at: Date; node: string; what: string };

export type LabUpsFeed = {
  readonly events: readonly LabFeedEvent[];
  /** Resolves once every reaction to the last output change (power cut, boot) has finished. */
  settled(): Promise<void>;
  stop(): void;
};

export function feedFromLabUps(ups: LabUps, nodes: readonly LabNode[]): LabUpsFeed {
  const events: LabFeedEvent[] = [];
  let pending: Promise<void> = Promise.resolve();
  const log = (node: LabNode, what: string) =>
    events.push({ at: new Date(), node: node.name, what });
  const unsubscribe = ups.control.onOutputChange((on) => {
    pending = pending.then(() =>
      Promise.all(
        nodes.map(async (node) => {
          if (!on) {
            const wasUp = node.power.state !== "down";
            await node.power.cutPower();
            log(node, wasUp ? "lost power while up (hard off)" : "lost power (already down)");
            return;
          }
          if (!node.bios.powerOnAfterAcLoss) {
            log(node, "power back; stays off (BIOS: stay off after AC loss)");
            return;
          }
          log(node, "power back; boots (BIOS: power on after AC loss)");
          await node.power.powerOn();
          log(node, "up");
        }),
      ).then(() => {}),
    );
  });
  return {
    events,
    settled: () => pending,
    stop: unsubscribe,
  };
}
