import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, utimes, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";

import { freePort } from "@/lib/db/embedded-postgres";

import { waitUntil } from "../processes";
import { isRunning, terminate } from "./peer-process";
import { nutExchange } from "./nut-exchange";

/**
 * A real NUT server as a test peer: Debian's `upsd` (package nut-server) with one `dummy-ups`
 * driver per UPS, each reading a `.dev` file the test rewrites, all our children on a free
 * loopback port with their own configuration in a temp folder. The same client scenarios run
 * against it and against the lab's NUT face, so the lab cannot drift into a private dialect.
 *
 * What Debian's NUT 2.8.0 does, measured here:
 * - dummy-ups treats `*.dev` as "dummy-once": it re-reads the file when its mtime changes,
 *   checked every `pollinterval` (1 s here); upsd serves the change within about a second.
 *   The mtime is compared in whole seconds, so every rewrite gets a later second of its own.
 * - A driver that stops answering (SIGSTOP) makes upsd answer `ERR DATA-STALE` after MAXAGE
 *   (3 s here, default 15 s); a driver that exits makes it answer `ERR DRIVER-NOT-CONNECTED`.
 * - upsd serves `ups.status "WAIT"` from each (re)connect to a driver's socket until the driver
 *   has dumped its data (server/sstate.c). It reconnects at once when it loses a driver, so a
 *   driver on its way out can read WAIT for a moment before DRIVER-NOT-CONNECTED.
 * - `USERNAME` and `PASSWORD` always answer OK; only `LOGIN` checks them (ERR ACCESS-DENIED).
 * - As root, both programs switch to the `nut` user unless told otherwise, and `nut` could not
 *   enter the 0700 temp folder: they run as the user running the tests (`-u`, `user =`).
 */

export const NUT_PROGRAMS = "/lib/nut";
const UPSD = path.join(NUT_PROGRAMS, "upsd");
const DUMMY_UPS = path.join(NUT_PROGRAMS, "dummy-ups");

/**
 * The monitoring user of the peer's upsd.users (`upsmon secondary`), also allowed the one
 * instant command Debian's dummy-ups 2.8.0 offers (`instcmds = load.off`): dummy-ups lists no
 * other (drivers/dummy-ups.c: `dstate_addcmd("load.off")`), so upsd's acceptance of an
 * INSTCMD can only be shown with it; `shutdown.return` on dummy-ups is ERR CMD-NOT-SUPPORTED.
 */
export const UPSD_PEER_USER = {
  username: "monuser",
  // Spaces, quotes and a backslash: the client must quote it as upsd's parser reads it.
  password: String.raw`lab "ups" \ secret`,
};
// The same password as upsd.users spells it, written out by hand (not with the client's
// quoting) so that a quoting bug cannot cancel itself out.
const UPSD_PEER_PASSWORD_CONFIG = String.raw`"lab \"ups\" \\ secret"`;

/** A `upsmon primary` user, as the UPS's own upsmon would log in (it may send FSD). */
export const UPSD_PEER_PRIMARY = { username: "upsprimary", password: "primary-secret" };

/**
 * A user with a password but no `upsmon` line (only `actions = SET`), as an admin may have made
 * one for another tool: upsd refuses its LOGIN, so it cannot monitor.
 */
export const UPSD_PEER_NO_UPSMON = { username: "setonly", password: "set-secret" };

export const UPSD_PEER_MAXAGE_SECONDS = 3;

export type UpsVars = Readonly<Record<string, string>>;

export type UpsdPeer = {
  host: "127.0.0.1";
  port: number;
  /** The UPS names in ups.conf. */
  upsNames: readonly string[];
  /** Rewrites the UPS's `.dev` file; dummy-ups and upsd serve it within about a second. */
  setVars(ups: string, vars: UpsVars): Promise<void>;
  /** `freeze`: SIGSTOP (stale after MAXAGE); `kill`: the driver exits (not connected). */
  stopDriver(ups: string, how: "freeze" | "kill"): Promise<void>;
  /** Resumes a frozen driver or starts a killed one again. */
  startDriver(ups: string): Promise<void>;
  /** Stops upsd itself (drivers keep running): connections are refused. */
  stopUpsd(): Promise<void>;
  startUpsd(): Promise<void>;
  /** What upsd and the drivers wrote, for diagnosing a failing test. */
  log(): string;
  stop(): Promise<void>;
};

/** True when Debian's nut-server programs are where the peer expects them. */
export function upsdAvailable(): boolean {
  return existsSync(UPSD) && existsSync(DUMMY_UPS);
}

export async function startUpsdPeer(options: {
  ups: ReadonlyArray<{ name: string; vars: UpsVars }>;
}): Promise<UpsdPeer> {
  if (!upsdAvailable()) {
    throw new Error(
      `lab: ${UPSD} or ${DUMMY_UPS} not found; install Debian's nut-server to run the NUT parity tests`,
    );
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "clupilot-upsd-"));
  const etc = path.join(dir, "etc");
  const state = path.join(dir, "state");
  const user = os.userInfo().username;
  const env: Record<string, string> = {
    PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
    NUT_CONFPATH: etc,
    NUT_STATEPATH: state,
    NUT_ALTPIDPATH: state,
  };
  const logLines: string[] = [];
  const drivers = new Map<string, ChildProcess>();
  const frozen = new Set<string>();
  const mtimes = new Map<string, number>();
  let upsd: ChildProcess | null = null;
  let port = 0;

  const devFile = (ups: string) => path.join(etc, `${ups}.dev`);
  const spawnLogged = (label: string, args: string[]): ChildProcess => {
    const child = spawn(args[0]!, args.slice(1), {
      env: env as NodeJS.ProcessEnv,
      stdio: ["ignore", "pipe", "pipe"],
    });
    const collect = (chunk: Buffer) => logLines.push(`${label}: ${chunk.toString("utf8")}`);
    child.stdout?.on("data", collect);
    child.stderr?.on("data", collect);
    child.on("error", (error) => logLines.push(`${label}: ${error.message}\n`));
    return child;
  };
  const setVars = async (ups: string, vars: UpsVars) => {
    if (!options.ups.some((u) => u.name === ups)) throw new Error(`lab: no UPS ${ups} in upsd`);
    const text = Object.entries(vars)
      .map(([name, value]) => `${name}: ${value}\n`)
      .join("");
    // A later whole second than the last rewrite: dummy-ups only sees a changed st_mtime.
    const second = Math.max(Math.floor(Date.now() / 1000), (mtimes.get(ups) ?? 0) + 1);
    mtimes.set(ups, second);
    const temp = `${devFile(ups)}.tmp`;
    await writeFile(temp, text, { mode: 0o600 });
    await utimes(temp, second, second);
    await rename(temp, devFile(ups));
  };
  const startDriver = async (ups: string) => {
    const running = drivers.get(ups);
    if (running !== undefined && isRunning(running)) {
      if (frozen.delete(ups)) running.kill("SIGCONT");
      return;
    }
    const child = spawnLogged(`dummy-ups ${ups}`, [DUMMY_UPS, "-a", ups, "-u", user, "-F"]);
    drivers.set(ups, child);
    await waitUntil(() => existsSync(path.join(state, `dummy-ups-${ups}`)) || !isRunning(child), {
      timeoutMs: 10_000,
      what: `dummy-ups for ${ups} to open its socket`,
    });
    if (!isRunning(child))
      throw new Error(`lab: dummy-ups for ${ups} exited:\n${logLines.join("")}`);
  };
  const stopDriver = async (ups: string, how: "freeze" | "kill") => {
    const child = drivers.get(ups);
    if (child === undefined || !isRunning(child)) return;
    if (how === "freeze") {
      child.kill("SIGSTOP");
      frozen.add(ups);
      return;
    }
    frozen.delete(ups);
    await terminate(child);
  };
  const startUpsd = async () => {
    if (upsd !== null && isRunning(upsd)) return;
    const child = spawnLogged("upsd", [UPSD, "-u", user, "-F"]);
    upsd = child;
    await waitUntil(async () => !isRunning(child) || (await accepts(port)), {
      timeoutMs: 10_000,
      what: "upsd to listen",
    });
    if (!isRunning(child)) throw new Error(`lab: upsd exited:\n${logLines.join("")}`);
  };
  const stopUpsd = async () => {
    if (upsd !== null) await terminate(upsd);
    upsd = null;
  };
  const stopAll = async () => {
    await stopUpsd();
    await Promise.all([...drivers.values()].map((child) => terminate(child)));
  };

  try {
    await mkdir(etc, { mode: 0o700 });
    await mkdir(state, { mode: 0o700 });
    port = await freePort();
    const upsConf = [
      `user = ${user}`,
      ...options.ups.flatMap(({ name }) => [
        `[${name}]`,
        "  driver = dummy-ups",
        `  port = ${devFile(name)}`,
        "  pollinterval = 1",
        // As the lab's NUT face describes its UPS, so LIST UPS can be compared.
        '  desc = "CluPilot lab UPS"',
      ]),
      "",
    ].join("\n");
    await writeFile(path.join(etc, "ups.conf"), upsConf, { mode: 0o600 });
    await writeFile(
      path.join(etc, "upsd.conf"),
      `LISTEN 127.0.0.1 ${port}\nMAXAGE ${UPSD_PEER_MAXAGE_SECONDS}\n`,
      { mode: 0o600 },
    );
    await writeFile(
      path.join(etc, "upsd.users"),
      [
        `[${UPSD_PEER_USER.username}]`,
        `  password = ${UPSD_PEER_PASSWORD_CONFIG}`,
        "  upsmon secondary",
        "  instcmds = load.off",
        `[${UPSD_PEER_PRIMARY.username}]`,
        `  password = ${UPSD_PEER_PRIMARY.password}`,
        "  upsmon primary",
        `[${UPSD_PEER_NO_UPSMON.username}]`,
        `  password = ${UPSD_PEER_NO_UPSMON.password}`,
        "  actions = SET",
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    await writeFile(path.join(etc, "nut.conf"), "MODE=standalone\n", { mode: 0o600 });
    for (const ups of options.ups) await setVars(ups.name, ups.vars);
    for (const ups of options.ups) await startDriver(ups.name);
    await startUpsd();
    // Ready when upsd serves each UPS's own data (not DRIVER-NOT-CONNECTED, not the driver's
    // WAIT before it has read its file).
    for (const ups of options.ups) {
      await waitUntil(
        async () => {
          const [answer] = await nutExchange(port, [`GET VAR ${ups.name} ups.status`]);
          return /^VAR \S+ ups\.status "(?!WAIT")/.test(answer?.[0] ?? "");
        },
        { timeoutMs: 10_000, what: `upsd to serve ${ups.name}` },
      );
    }
  } catch (error) {
    await stopAll();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  let stopped: Promise<void> | null = null;
  return {
    host: "127.0.0.1",
    port,
    upsNames: options.ups.map((ups) => ups.name),
    setVars,
    stopDriver,
    startDriver,
    stopUpsd,
    startUpsd,
    log: () => logLines.join(""),
    stop() {
      stopped ??= (async () => {
        await stopAll();
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
