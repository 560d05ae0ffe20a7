import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

import { program } from "../namespace/enter";
import { waitUntil } from "../processes";
import { isRunning, terminate } from "./peer-process";
import { NUT_PROGRAMS, UPSD_PEER_PRIMARY } from "./upsd-peer";

const UPSMON = path.join(NUT_PROGRAMS, "upsmon");

/**
 * NUT's own upsmon (Debian's nut-client) as a test peer: the UPS's **primary**, as on the
 * machine the UPS is plugged into, watching an upsd peer (./upsd-peer.ts). Its SHUTDOWNCMD
 * shuts nothing down: it writes the wall clock (`date +%s%N`) to a file — the moment it decided
 * to shut its machine down.
 *
 * What Debian's NUT 2.8.0 does, measured here:
 * - On a critical UPS (OB LB, or FSD) a primary sets FSD, then asks upsd for the UPS's
 *   NUMLOGINS every 250 ms until it is the only system logged in — every secondary logged out —
 *   or HOSTSYNC is over (it then says "Host sync timer expired, forcing shutdown"); then waits
 *   FINALDELAY, runs SHUTDOWNCMD ("Executing automatic power-fail shutdown"), and exits.
 * - It writes its PID file to /run/nut whatever NUT_ALTPIDPATH says, and refuses to start while
 *   another upsmon's PID file there names a live process: it runs in a mount namespace of its
 *   own (`unshare --mount`; as another user inside a user namespace, where it is root) with a
 *   temp folder bound over /run, so it neither sees nor leaves anything on the machine's /run.
 * - `-p` keeps it one process (no unprivileged child; `unshare` and the shell exec it, so the
 *   child is upsmon itself, stopped as the upsd peer's are) and `-u root` lets it into the 0700
 *   temp folder; `-D` puts its log on stderr, kept for the test to read. SHUTDOWNCMD's script
 *   ends by itself.
 */
export type UpsmonPrimary = {
  /** When SHUTDOWNCMD ran (ms since the epoch, sub-millisecond), or null while it has not. */
  shutdownAt(): Promise<number | null>;
  /** Everything upsmon printed so far. */
  log(): string;
  /** Stops upsmon and whatever it started, and removes its folder. Idempotent. */
  stop(): Promise<void>;
};

export function upsmonAvailable(): boolean {
  return existsSync(UPSMON);
}

export async function startUpsmonPrimary(options: {
  port: number;
  ups: string;
  /** How long it waits for logged-in secondaries before it shuts down anyway (NUT: 15 s). */
  hostsyncSeconds: number;
  /** POLLFREQ and POLLFREQALERT (NUT: 5 s). */
  pollSeconds?: number;
}): Promise<UpsmonPrimary> {
  if (!upsmonAvailable()) {
    throw new Error(`lab: ${UPSMON} not found; install Debian's nut-client to run upsmon tests`);
  }
  const dir = await mkdtemp(path.join(os.tmpdir(), "clupilot-upsmon-"));
  const marker = path.join(dir, "shutdown-at");
  const poll = options.pollSeconds ?? 1;
  const { username, password } = UPSD_PEER_PRIMARY;
  let child: ChildProcess | null = null;
  let printed = "";

  const stopChild = async () => {
    if (child !== null) await terminate(child);
  };

  try {
    await mkdir(path.join(dir, "run", "nut"), { recursive: true });
    const shutdownCmd = path.join(dir, "shutdown-cmd");
    await writeFile(
      shutdownCmd,
      `#!/bin/sh\ndate +%s%N > ${marker}.new && mv ${marker}.new ${marker}\n`,
    );
    await chmod(shutdownCmd, 0o700);
    const events = ["ONLINE", "ONBATT", "LOWBATT", "FSD", "COMMOK", "COMMBAD", "SHUTDOWN"];
    await writeFile(
      path.join(dir, "upsmon.conf"),
      [
        `MONITOR ${options.ups}@127.0.0.1:${options.port} 1 ${username} ${password} primary`,
        "MINSUPPLIES 1",
        `SHUTDOWNCMD "${shutdownCmd}"`,
        `POLLFREQ ${poll}`,
        `POLLFREQALERT ${poll}`,
        `DEADTIME ${Math.max(15, poll * 3)}`,
        `HOSTSYNC ${options.hostsyncSeconds}`,
        "FINALDELAY 0",
        `POWERDOWNFLAG ${path.join(dir, "killpower")}`,
        // No wall(1) to every terminal of the machine: the log is enough.
        ...events.map((event) => `NOTIFYFLAG ${event} SYSLOG`),
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
    await writeFile(path.join(dir, "nut.conf"), "MODE=standalone\n", { mode: 0o600 });

    const env: Record<string, string> = {
      PATH: "/usr/sbin:/usr/bin:/sbin:/bin",
      NUT_CONFPATH: dir,
      NUT_STATEPATH: dir,
    };
    const asUser = process.getuid?.() !== 0;
    const started = spawn(
      program("unshare"),
      [
        ...(asUser ? ["--user", "--map-root-user"] : []),
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        'mount --bind "$1/run" /run && exec "$2" -D -F -p -u root',
        "sh",
        dir,
        UPSMON,
      ],
      {
        env: env as NodeJS.ProcessEnv,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child = started;
    const collect = (chunk: Buffer) => (printed += chunk.toString("utf8"));
    started.stdout!.on("data", collect);
    started.stderr!.on("data", collect);
    started.on("error", (error) => (printed += `${error.message}\n`));
    await waitUntil(() => printed.includes("Logged into UPS") || !isRunning(started), {
      timeoutMs: 10_000,
      what: "upsmon to log in to upsd",
    });
    if (!isRunning(started) && !printed.includes("Logged into UPS")) {
      throw new Error(`lab: upsmon exited before it logged in:\n${printed}`);
    }
  } catch (error) {
    await stopChild();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  let stopped: Promise<void> | null = null;
  return {
    async shutdownAt() {
      const text = await readFile(marker, "utf8").catch(() => null);
      return text === null ? null : Number(BigInt(text.trim()) / 1000n) / 1000;
    },
    log: () => printed,
    stop() {
      stopped ??= (async () => {
        await stopChild();
        await rm(dir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
}
