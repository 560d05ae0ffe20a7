import { describe, expect, it } from "vitest";
import { GUEST_READ_BACK_POLL_MS } from "@/lib/power/clusters/sequence-plan";
import { nextLookMs, type GuestWork } from "./start-guests";

const at = (ms: number) => new Date(ms).toISOString();
const NOW = Date.parse("2026-12-05T20:00:00Z");

describe("when StartGuests looks at an order again", () => {
  const batch = [
    { vmid: 101, order: 1, up: 30 },
    { vmid: 102, order: 1, up: 30 },
    { vmid: 103, order: 1, up: 30 },
  ];

  it("a guest started and not yet read running is read back after the guest read-back pause, not at the engine's next visit", () => {
    const state: Record<string, GuestWork> = {
      101: { sentAt: at(NOW - 100) },
      102: { sentAt: at(NOW - 5000), runningAt: at(NOW - 4000), outcome: "running" },
    };
    expect(nextLookMs(batch, state, NOW)).toBe(GUEST_READ_BACK_POLL_MS);
  });

  it("with only up-delays under way, the moment the first one passes frees a slot: exactly then", () => {
    const state: Record<string, GuestWork> = {
      101: { sentAt: at(NOW - 5000), runningAt: at(NOW - 4000), outcome: "running" },
      102: { sentAt: at(NOW - 5000), runningAt: at(NOW - 10_000), outcome: "running" },
    };
    expect(nextLookMs(batch, state, NOW)).toBe(20_000);
  });

  it("0 once the order is done (failed guests and passed up-delays), so the next order begins in the same look", () => {
    const state: Record<string, GuestWork> = {
      101: { sentAt: at(NOW - 60_000), runningAt: at(NOW - 31_000), outcome: "running" },
      102: { outcome: "failed" },
      103: { sentAt: at(NOW - 60_000), runningAt: at(NOW - 30_000), outcome: "running" },
    };
    expect(nextLookMs(batch, state, NOW)).toBe(0);
  });

  it("a guest without an up-delay holds no slot once it runs", () => {
    const unordered = [
      { vmid: 201, order: null, up: null },
      { vmid: 202, order: null, up: null },
    ];
    const state: Record<string, GuestWork> = {
      201: { sentAt: at(NOW - 2000), runningAt: at(NOW - 1), outcome: "running" },
    };
    expect(nextLookMs(unordered, state, NOW)).toBe(0);
  });
});
