import { describe, expect, it } from "vitest";
import { trackReachability } from "./reachability";

const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
  code: "ECONNREFUSED",
});

function tracker() {
  const lines: string[] = [];
  let now = 1_000;
  const reachability = trackReachability({
    log: (line) => lines.push(line),
    meanwhile: "ticks wait",
    now: () => now,
  });
  return { reachability, lines, advance: (ms: number) => void (now += ms) };
}

describe("a process's view of its database", () => {
  it("logs one line when the database goes away and one when it answers again, however many calls fail", () => {
    const { reachability, lines, advance } = tracker();
    reachability.answered();
    expect(reachability.backSince).toBeNull();
    for (let i = 0; i < 20; i++) reachability.lost(refused);
    expect(reachability.reachable).toBe(false);
    advance(4_200);
    reachability.answered();
    reachability.answered();
    expect(reachability.reachable).toBe(true);
    expect(reachability.backSince).toBe(5_200);
    expect(lines).toEqual([
      "database unreachable (Error [ECONNREFUSED]: connect ECONNREFUSED 127.0.0.1:5432); ticks wait",
      "database reachable again after 4.2 s",
    ]);
  });

  it("does not count a query on a client that broke earlier as the database going away", () => {
    const { reachability, lines } = tracker();
    reachability.lost(new Error("Client has encountered a connection error and is not queryable"));
    expect(reachability.reachable).toBe(true);
    expect(lines).toEqual([]);
  });
});
