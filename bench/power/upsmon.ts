import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { NUT_PROGRAMS, UPSD_PEER_PRIMARY, type UpsdPeer } from "@/lab/ups/upsd-peer";
import { exitOf, spawnUntilEnd, stopProcessGroup } from "../support/processes";
import { BenchCannotRun, stopAtEnd } from "../support/run-bench";

const UPSMON = path.join(NUT_PROGRAMS, "upsmon");

/**
 * NUT's own upsmon (Debian nut-client) watching the bench's upsd as the reference measurement
 * on this machine did (median 3.1 s over 5 flips, private upsd, dummy-ups): a `primary`
 * MONITOR line, POLLFREQ and POLLFREQALERT at their default 5 s, FINALDELAY 0, run in the
 * foreground as root (RUN_AS_USER root: the temp folder is 0700). Its SHUTDOWNCMD appends the
 * wall-clock time (`date +%s.%N`) to a file: that line is the moment it decided to shut down.
 *
 * A primary that shuts down sets FSD on upsd, which upsd keeps until it restarts, and upsmon
 * itself is done after SHUTDOWNCMD: each flip starts a fresh upsmon (`start`) and ends it
 * (`stop`); the bench restarts upsd in between.
 */
export type Upsmon = {
  /** Starts a fresh upsmon; resolves once it runs (it polls at once, then every 5 s). */
  start(): Promise<void>;
  /** Ends the running upsmon (if any). */
  stop(): Promise<void>;
  /** Every SHUTDOWNCMD time so far (ms since the epoch), oldest first. */
  shutdownTimes(): Promise<number[]>;
  /** What the last upsmon printed, for a flip it never reacted to. */
  log(): string;
};

export async function prepareUpsmon(peer: UpsdPeer, ups: string): Promise<Upsmon> {
  if (!existsSync(UPSMON)) {
    throw new BenchCannotRun(
      `${UPSMON} not found: install Debian's nut-client (apt-get install nut-client) for the side-by-side with upsmon`,
    );
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "clupilot-bench-upsmon-"));
  stopAtEnd(`the folder ${dir}`, () => rm(dir, { recursive: true, force: true }));
  const times = path.join(dir, "shutdown-times");
  await writeFile(times, "");
  const { username, password } = UPSD_PEER_PRIMARY;
  await writeFile(
    path.join(dir, "upsmon.conf"),
    [
      "RUN_AS_USER root",
      `MONITOR ${ups}@127.0.0.1:${peer.port} 1 ${username} ${password} primary`,
      "MINSUPPLIES 1",
      "POLLFREQ 5",
      "POLLFREQALERT 5",
      `SHUTDOWNCMD "/bin/sh -c 'date +%s.%N >> ${times}'"`,
      `POWERDOWNFLAG ${path.join(dir, "killpower")}`,
      "FINALDELAY 0",
      "",
    ].join("\n"),
    { mode: 0o600 },
  );
  await writeFile(path.join(dir, "nut.conf"), "MODE=standalone\n", { mode: 0o600 });

  const env: Record<string, string> = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    NUT_CONFPATH: dir,
    NUT_STATEPATH: dir,
    NUT_ALTPIDPATH: dir,
  };
  let child: ChildProcess | null = null;
  let printed = "";
  return {
    async start() {
      printed = "";
      const started = spawnUntilEnd("upsmon", UPSMON, ["-F"], {
        env: env as NodeJS.ProcessEnv,
        stdio: ["ignore", "pipe", "pipe"],
      });
      const collect = (chunk: Buffer) => (printed = (printed + chunk.toString()).slice(-4000));
      started.stdout!.on("data", collect);
      started.stderr!.on("data", collect);
      child = started;
      // Started when it has not exited within a moment (a bad config makes it exit at once).
      const exited = await Promise.race([
        exitOf(started).then((code) => `exited (${code})`),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 300)),
      ]);
      if (exited) throw new Error(`upsmon ${exited}:\n${printed.trim()}`);
    },
    async stop() {
      if (child) await stopProcessGroup(child, 3000);
      child = null;
    },
    async shutdownTimes() {
      return (await readFile(times, "utf8"))
        .split("\n")
        .filter((line) => line.trim() !== "")
        .map((line) => Math.round(Number(line) * 1000));
    },
    log: () => printed,
  };
}
