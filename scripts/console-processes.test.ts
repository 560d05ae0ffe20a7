import { describe, expect, it } from "vitest";
import { workerProcesses } from "./console-processes";

/** An environment with only the given variables besides NODE_ENV. */
const env = (vars: Record<string, string> = {}): NodeJS.ProcessEnv => ({
  NODE_ENV: "test",
  ...vars,
});

describe("npm start's worker processes (CLUPILOT_WORKERS)", () => {
  it("runs one worker, named `worker`, when unset or empty", () => {
    expect(workerProcesses(env()).map((service) => service.name)).toEqual(["worker"]);
    expect(workerProcesses(env({ CLUPILOT_WORKERS: " " })).map((service) => service.name)).toEqual([
      "worker",
    ]);
  });

  it("runs N workers named `worker 1` … `worker N`, so the log says which one ended", () => {
    expect(workerProcesses(env({ CLUPILOT_WORKERS: "3" })).map((service) => service.name)).toEqual([
      "worker 1",
      "worker 2",
      "worker 3",
    ]);
  });

  it.each(["0", "-1", "1.5", "two", "33"])("refuses %s, saying what to set", (value) => {
    expect(() => workerProcesses(env({ CLUPILOT_WORKERS: value }))).toThrow(
      `CLUPILOT_WORKERS="${value}" is not a number of worker processes: set a whole number from 1 to 32, or unset it for one.`,
    );
  });
});
