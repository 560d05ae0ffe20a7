import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { END_WITH_SUPERVISOR_IMPORT } from "@/lib/supervisor/supervisor-pid";
import { waitFor } from "@/test/worker-process";

/**
 * The supervisor as `npm start` runs it: a real process (test/fixtures/supervised-children.ts)
 * supervising real child processes, signalled for real. Backoff and crash-loop windows are
 * short here; the rules are the same.
 */

const root = path.resolve(import.meta.dirname, "../..");

type Harness = {
  process: ChildProcess;
  output(): string;
  lines(pattern: RegExp): RegExpMatchArray[];
  waitForLine(pattern: RegExp, count?: number, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
};

const harnesses: Harness[] = [];

function supervise(config: {
  services: { name: string; script: string; maxDelayMs?: number }[];
  backoff?: { initialMs: number; maxMs: number; stableMs: number };
  crashLoop?: { restarts: number; windowMs: number };
  stopGraceMs?: number;
  endWithSupervisor?: boolean;
}): Harness {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "test/fixtures/supervised-children.ts",
      JSON.stringify({ backoff: { initialMs: 100, maxMs: 400, stableMs: 60_000 }, ...config }),
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => (output += chunk));
  child.stderr!.on("data", (chunk) => (output += chunk));
  const lines = (pattern: RegExp) =>
    output.split("\n").flatMap((line) => {
      const match = pattern.exec(line);
      return match ? [match] : [];
    });
  const harness: Harness = {
    process: child,
    output: () => output,
    lines,
    waitForLine: (pattern, count = 1, timeoutMs = 20_000) =>
      waitFor(
        `${count} line(s) ${pattern} in:\n${output}`,
        async () => lines(pattern)[count - 1],
        timeoutMs,
        20,
      ),
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  harnesses.push(harness);
  return harness;
}

/** Every pid a child script printed ("<name> up <pid>", "<name> grandchild <pid>"). */
function printedPids(harness: Harness): number[] {
  return harness.lines(/ (?:up|grandchild) (\d+)/).map((match) => Number(match[1]));
}

/** Whether `pid` is a live process (a zombie waiting for its parent to reap it is not). */
function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return false;
  }
}

afterEach(async () => {
  // Whatever a failed test left: stop the supervisor, then make sure every child is gone.
  for (const harness of harnesses.splice(0)) {
    if (harness.process.exitCode === null && harness.process.signalCode === null) {
      harness.process.kill("SIGTERM");
      const timer = setTimeout(() => harness.process.kill("SIGKILL"), 10_000);
      await harness.exited;
      clearTimeout(timer);
    }
    for (const pid of printedPids(harness).filter(isRunning)) process.kill(pid, "SIGKILL");
  }
});

/** A child script: says it is up (name, pid, time), then does `body`. */
const child = (name: string, body: string) =>
  `const fs = require("node:fs"); const name = ${JSON.stringify(name)};` +
  `console.log(name + " up " + process.pid + " " + Date.now()); ${body}`;
const STAY_UP = "setInterval(() => {}, 60_000);";
const WITH_GRANDCHILD =
  `const g = require("node:child_process").spawn("sleep", ["300"], { stdio: "ignore" });` +
  `console.log(name + " grandchild " + g.pid);`;

const upPids = (harness: Harness, name: string) =>
  harness.lines(new RegExp(`^${name} up (\\d+)`)).map((match) => Number(match[1]));

/** The pids of `<name> started (pid N)` and `<name> started again (pid N)`, in order. */
const startedPids = (harness: Harness, name: string) =>
  harness
    .lines(new RegExp(`^\\[supervisor\\] ${name} started(?: again)? \\(pid (\\d+)\\)$`))
    .map((match) => Number(match[1]));

/** `<name> ended (<ending>)[ after …]; restarting it in <delay> (restart <n> within …)` */
const restartLine = (name: string) =>
  new RegExp(
    `^\\[supervisor\\] ${name} ended \\((.+?)\\)(?: after [^;]+)?; restarting it in (.+?) \\(restart (\\d+) within`,
  );

/** "250 ms" / "1.5 s" as the log writes them, back to milliseconds. */
const spanMs = (span: string) =>
  span.endsWith(" ms") ? Number(span.slice(0, -3)) : Number(span.slice(0, -2)) * 1_000;

describe("npm start's supervisor", () => {
  it("restarts a child killed with SIGKILL, saying which, how it ended and when, and the new one's pid; the others keep running", async () => {
    const harness = supervise({
      services: [
        { name: "victim", script: child("victim", STAY_UP) },
        { name: "bystander", script: child("bystander", STAY_UP) },
      ],
    });
    await harness.waitForLine(/^victim up/);
    await harness.waitForLine(/^bystander up/);
    const [victim] = upPids(harness, "victim");
    const [bystander] = upPids(harness, "bystander");
    // Each start names the process it started: with two of a kind, the only way to tell them apart.
    await harness.waitForLine(/^\[supervisor\] bystander started \(pid \d+\)$/);
    expect(startedPids(harness, "victim")).toEqual([victim]);
    expect(startedPids(harness, "bystander")).toEqual([bystander]);

    process.kill(victim!, "SIGKILL");
    const line = await harness.waitForLine(restartLine("victim"));
    expect(line[1]).toBe("killed by SIGKILL");
    expect(line[2]).toBe("100 ms");
    expect(line[3]).toBe("1");
    await harness.waitForLine(/^victim up/, 2);

    const [, again] = upPids(harness, "victim");
    expect(again).not.toBe(victim);
    expect(isRunning(again!)).toBe(true);
    await harness.waitForLine(/^\[supervisor\] victim started again \(pid \d+\)$/);
    expect(startedPids(harness, "victim")).toEqual([victim, again]);
    expect(upPids(harness, "bystander")).toEqual([bystander]);
    expect(isRunning(bystander!)).toBe(true);
  });

  it("restarts a child that ends with exit code 0 as well: it should run until stopped", async () => {
    const harness = supervise({
      services: [{ name: "quitter", script: child("quitter", "setTimeout(() => {}, 200);") }],
    });
    const line = await harness.waitForLine(restartLine("quitter"));
    expect(line[1]).toBe("exit code 0, though it should run until stopped");
    await harness.waitForLine(/^quitter up/, 2);
  });

  it("doubles the delay while a child keeps ending, up to the maximum, and waits each delay out", async () => {
    const harness = supervise({
      services: [{ name: "flappy", script: child("flappy", "process.exit(3);") }],
    });
    await harness.waitForLine(restartLine("flappy"), 5);
    await harness.waitForLine(/^flappy up/, 6);
    const restarts = harness.lines(restartLine("flappy")).slice(0, 5);
    expect(restarts.map((line) => line[1])).toEqual(Array(5).fill("exit code 3"));
    expect(restarts.map((line) => line[2])).toEqual([
      "100 ms",
      "200 ms",
      "400 ms",
      "400 ms",
      "400 ms",
    ]);

    // Each run started no sooner than the announced delay after the previous one began.
    const startedAt = harness.lines(/^flappy up \d+ (\d+)/).map((match) => Number(match[1]));
    for (let i = 1; i <= 5; i++) {
      expect(startedAt[i]! - startedAt[i - 1]!).toBeGreaterThanOrEqual(
        spanMs(restarts[i - 1]![2]!),
      );
    }
  });

  it("a service with a ceiling of its own (the database's) waits no longer than it, beside one on the common rule", async () => {
    const harness = supervise({
      services: [
        { name: "eager", script: child("eager", "process.exit(3);"), maxDelayMs: 200 },
        { name: "flappy", script: child("flappy", "process.exit(3);") },
      ],
    });
    await harness.waitForLine(restartLine("eager"), 4);
    await harness.waitForLine(restartLine("flappy"), 4);
    const delays = (name: string) =>
      harness
        .lines(restartLine(name))
        .slice(0, 4)
        .map((line) => line[2]);
    expect(delays("eager")).toEqual(["100 ms", "200 ms", "200 ms", "200 ms"]);
    expect(delays("flappy")).toEqual(["100 ms", "200 ms", "400 ms", "400 ms"]);
  });

  it("starts the backoff over once a run stayed up for the stable period", async () => {
    const counter = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-sup-")), "runs");
    // Runs 1 and 2 end at once; from run 3 on each stays up 3 s (stable after 2 s). A run's
    // time up includes Node's start, which takes well over 400 ms on a loaded machine.
    const script = child(
      "settling",
      `const f = ${JSON.stringify(counter)}; const n = fs.existsSync(f) ? fs.readFileSync(f, "utf8").length : 0;` +
        `fs.appendFileSync(f, "x"); if (n < 2) process.exit(3); setTimeout(() => process.exit(4), 3_000);`,
    );
    const harness = supervise({
      services: [{ name: "settling", script }],
      backoff: { initialMs: 100, maxMs: 1_600, stableMs: 2_000 },
    });
    await harness.waitForLine(restartLine("settling"), 4);
    const restarts = harness.lines(restartLine("settling")).slice(0, 4);
    expect(restarts.map((line) => [line[1], line[2]])).toEqual([
      ["exit code 3", "100 ms"],
      ["exit code 3", "200 ms"],
      ["exit code 4", "100 ms"],
      ["exit code 4", "100 ms"],
    ]);
    fs.rmSync(path.dirname(counter), { recursive: true, force: true });
  });

  it("reports a crash loop once when it begins, and once when it is over", async () => {
    const calm = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-sup-")), "calm");
    const harness = supervise({
      services: [
        {
          name: "looping",
          script: child(
            "looping",
            `if (!fs.existsSync(${JSON.stringify(calm)})) process.exit(3); ${STAY_UP}`,
          ),
        },
      ],
      backoff: { initialMs: 50, maxMs: 100, stableMs: 60_000 },
      // 3 restarts within 5 s: a loop even when each run's start-up takes a busy machine's
      // second or two (within 2 s, such a loop ended and began again between restarts).
      crashLoop: { restarts: 3, windowMs: 5_000 },
    });
    const loop = await harness.waitForLine(/^\[supervisor\] CRASH LOOP: (.*)$/);
    expect(loop[1]).toBe(
      "the looping restarted 3 times within 5 s (last: exit code 3). It keeps being restarted, " +
        "at most 100 ms apart; the lines above say why it ends.",
    );
    // It keeps looping a while: the report is not repeated for every further restart.
    await harness.waitForLine(restartLine("looping"), 6);
    fs.writeFileSync(calm, "");
    await harness.waitForLine(
      /^\[supervisor\] the looping's crash loop is over: fewer than 3 restarts within the last 5 s$/,
    );
    expect(harness.lines(/CRASH LOOP/)).toHaveLength(1);
    expect(isRunning(upPids(harness, "looping").at(-1)!)).toBe(true);
    fs.rmSync(path.dirname(calm), { recursive: true, force: true });
  });

  it.each([
    ["SIGINT", "Ctrl-C"],
    ["SIGTERM", "SIGTERM"],
    ["SIGHUP", "the terminal closed (SIGHUP)"],
  ] as const)(
    "%s stops every child and what it started, a stubborn one with SIGKILL, and nothing is left running",
    async (signal, why) => {
      const harness = supervise({
        services: [
          { name: "parent", script: child("parent", WITH_GRANDCHILD + STAY_UP) },
          {
            name: "stubborn",
            script: child("stubborn", `process.on("SIGTERM", () => {}); ${STAY_UP}`),
          },
        ],
        stopGraceMs: 500,
      });
      await harness.waitForLine(/^parent grandchild/);
      await harness.waitForLine(/^stubborn up/);
      const pids = printedPids(harness);
      expect(pids).toHaveLength(3);
      expect(pids.every(isRunning)).toBe(true);

      harness.process.kill(signal);
      expect(await harness.exited).toBe(0);
      expect(harness.output()).toContain(`[supervisor] ${why}: stopping`);
      expect(harness.lines(/ ended \(/)).toEqual([]); // stopping is not a crash: no restart
      await waitFor("every child process gone", async () => !pids.some(isRunning), 10_000);
    },
  );

  it("starts nothing more when stopped while a restart is pending", async () => {
    const harness = supervise({
      services: [{ name: "flappy", script: child("flappy", "process.exit(3);") }],
      backoff: { initialMs: 3_000, maxMs: 3_000, stableMs: 60_000 },
    });
    await harness.waitForLine(restartLine("flappy"));
    harness.process.kill("SIGINT");
    expect(await harness.exited).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 3_500)); // past the restart's due time
    expect(upPids(harness, "flappy")).toHaveLength(1);
  });

  it("a child stops by itself when the supervisor is killed with SIGKILL: nothing runs on unsupervised", async () => {
    const harness = supervise({
      services: [
        { name: "alpha", script: child("alpha", STAY_UP) },
        { name: "beta", script: child("beta", STAY_UP) },
      ],
      endWithSupervisor: true,
    });
    await harness.waitForLine(/^alpha up/);
    await harness.waitForLine(/^beta up/);
    const pids = [...upPids(harness, "alpha"), ...upPids(harness, "beta")];
    harness.process.kill("SIGKILL");
    await harness.exited;
    await waitFor("both children gone", async () => pids.every((pid) => !isRunning(pid)), 10_000);
  });

  it("a process the child starts with the same preload (as Next's dev server forks) keeps running", async () => {
    const harness = supervise({
      services: [
        {
          name: "forker",
          script: child(
            "forker",
            `const g = require("node:child_process").spawn(process.execPath,` +
              ` ["--import", "tsx", "--import", ${JSON.stringify(END_WITH_SUPERVISOR_IMPORT)}, "-e", "setInterval(() => {}, 60000)"],` +
              ` { stdio: "ignore" }); console.log(name + " grandchild " + g.pid);` +
              STAY_UP,
          ),
        },
      ],
      endWithSupervisor: true,
    });
    const grandchild = Number((await harness.waitForLine(/^forker grandchild (\d+)/))[1]);
    // The preload checks once a second: three checks later the grandchild still runs.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(isRunning(grandchild)).toBe(true);
    expect(harness.lines(restartLine("forker"))).toEqual([]);
  });

  it("kills what a dead child left in its process group before starting it again", async () => {
    const harness = supervise({
      services: [{ name: "parent", script: child("parent", WITH_GRANDCHILD + STAY_UP) }],
    });
    const first = await harness.waitForLine(/^parent grandchild (\d+)/);
    const grandchild = Number(first[1]);
    process.kill(upPids(harness, "parent")[0]!, "SIGKILL");
    await harness.waitForLine(/^parent grandchild/, 2);
    await waitFor("the orphaned grandchild gone", async () => !isRunning(grandchild), 10_000);
  });
});
