import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ImageServer } from "@/lab";
import { labProxmoxKeyringEnv } from "@/lab/debian/apt-sources";
import { embeddedPostgresUrl, freePort } from "@/lib/db/embedded-postgres";
import { ensureProductionBuild } from "../support/production-build";
import { exitOf } from "../support/processes";
import { stopAtEnd } from "../support/run-bench";
import { createConsoleOutput, type ConsoleLine } from "./console-output";
import { isLive, processTable, readProcess, signal, type ProcessInfo } from "./proc";

const root = path.resolve(import.meta.dirname, "../..");

/** One restart as npm start's supervisor logs it (lib/supervisor/supervisor.ts). */
export type SupervisorRestart = { service: string; ending: string };

/** The console as `npm start` runs it, with what the soak needs to watch and hurt it. */
export type ConsoleUnderTest = {
  base: string;
  dataDir: string;
  /** The embedded Postgres's port (`CLUPILOT_PG_PORT`). */
  pgPort: number;
  /** The console's own database, for the invariants (read-only use). */
  databaseUrl: string;
  /** The `npm start` process (scripts/start.ts): it must stay the same process throughout. */
  startPid: number;
  /** Set once scripts/start.ts has exited (nobody may restart the console during a soak). */
  exited(): number | string | null;
  /** Everything the console printed so far (stdout and stderr), as a file. */
  logFile: string;
  /** Every child the supervisor saw end and restarted, in order (its log lines, parsed). */
  restarts(): SupervisorRestart[];
  workers(): ProcessInfo[];
  /**
   * Whether the production build the web server serves is still the one it started with: in a
   * shared working tree someone's `next build` replaces it under the running console, and every
   * web server restart then fails ("Could not find a production build").
   */
  buildReplaced(): boolean;
  /** The lines of its output the soak acts on (starts, ready workers, restarts), in order. */
  output(): readonly ConsoleLine[];
  webServer(): ProcessInfo | undefined;
  /** The postmaster and its backends; empty while the database is down. */
  postgres(): { postmaster: ProcessInfo; backends: ProcessInfo[] } | null;
};

/**
 * Starts scripts/start.ts the way a person runs `npm start`, on a throw-away data folder and
 * free ports, with TWO worker processes (CLUPILOT_WORKERS) and the lab's image server as its
 * mirror. The production build is built first if there is none. When the soak ends, however it
 * ends, the console gets one SIGTERM (as systemd or a terminal would send) and whatever it
 * leaves behind is killed; the data folder is removed.
 */
export async function startConsoleUnderTest(images: ImageServer): Promise<ConsoleUnderTest> {
  await ensureProductionBuild(root);
  const buildId = readBuildId();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-soak-"));
  // As root the embedded Postgres runs as `postgres`, which must reach its cluster in here.
  fs.chmodSync(dataDir, 0o755);
  stopAtEnd(`the data folder ${dataDir}`, () =>
    fs.rmSync(dataDir, { recursive: true, force: true }),
  );
  const logFile = path.join(dataDir, "console.log");
  const port = await freePort();
  const pgPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    CLUPILOT_DATA_DIR: dataDir,
    PORT: String(port),
    HOSTNAME: "127.0.0.1",
    CLUPILOT_PG_PORT: String(pgPort),
    CLUPILOT_WORKERS: "2",
    CLUPILOT_CLOUD_IMAGE_URL: images.imageUrl,
    CLUPILOT_CLOUD_IMAGE_SUMS_URL: images.sumsUrl,
    ...labProxmoxKeyringEnv(images.keyringUrl),
    // Lab hosts run on compressed time: poll them as often.
    CLUPILOT_POLL_SECONDS: "0.5",
    CLUPILOT_REBOOT_DEADLINE_SECONDS: "120",
  };
  delete env.DATABASE_URL;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/start.ts"], {
    cwd: root,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const startPid = child.pid!;
  // Every worker, web server and postmaster pid the soak saw, with its command line.
  const seen = new Map<number, string>();
  stopAtEnd("the console (npm start)", () => stopConsole(child, seen));

  const log = fs.openSync(logFile, "a");
  let recent: string[] = [];
  const output = createConsoleOutput();
  // Decoded per pipe: a character split across two chunks stays one character.
  const onOutput = (stream: "stdout" | "stderr") => (text: string) => {
    fs.writeSync(log, text);
    output.feed(stream, text);
    recent = [...recent, ...text.split("\n")].slice(-200);
  };
  child.stdout!.setEncoding("utf8").on("data", onOutput("stdout"));
  child.stderr!.setEncoding("utf8").on("data", onOutput("stderr"));
  let exit: number | string | null = null;
  void exitOf(child).then(
    (code) => (exit = code),
    (error: Error) => (exit = `not started: ${error.message}`),
  );

  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 300_000;
  for (;;) {
    if (exit !== null) {
      throw new Error(`npm start exited (${exit}) during start-up:\n${recent.join("\n")}`);
    }
    const status = await fetch(`${base}/api/hosts`, { signal: AbortSignal.timeout(5000) }).then(
      (response) => response.status,
      () => null,
    );
    // Up and guarded: the API refuses a request without credentials.
    if (status === 401) break;
    if (Date.now() > deadline) {
      throw new Error(`the console did not answer on ${base} within 300 s:\n${recent.join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }

  const clusterDir = () => fs.realpathSync(path.join(dataDir, "postgres"));
  const children = (script: string) =>
    processTable().filter(
      (p) => p.ppid === startPid && isLive(p) && p.cmdline.includes(script) && remember(p),
    );
  const remember = (p: ProcessInfo) => (seen.set(p.pid, p.cmdline), true);
  return {
    base,
    dataDir,
    pgPort,
    databaseUrl: embeddedPostgresUrl(path.join(dataDir, "postgres"), pgPort, "clupilot"),
    startPid,
    exited: () => exit,
    logFile,
    restarts: () =>
      output
        .lines()
        .flatMap((l) => (l.kind === "restart" ? [{ service: l.service, ending: l.ending }] : [])),
    workers: () => children("worker/main.ts"),
    output: () => output.lines(),
    buildReplaced: () => readBuildId() !== buildId,
    webServer: () => children("scripts/web-server.ts")[0],
    postgres() {
      let pid: number;
      try {
        pid = Number(
          fs.readFileSync(path.join(clusterDir(), "postmaster.pid"), "utf8").split("\n")[0],
        );
      } catch {
        return null;
      }
      const postmaster = readProcess(pid);
      if (!postmaster || !isLive(postmaster) || !postmaster.cmdline.includes("postgres")) {
        return null;
      }
      seen.set(pid, postmaster.cmdline);
      return {
        postmaster,
        backends: processTable().filter((p) => p.ppid === pid && isLive(p)),
      };
    },
  };
}

function readBuildId(): string | null {
  try {
    return fs.readFileSync(path.join(root, ".next", "BUILD_ID"), "utf8");
  } catch {
    return null;
  }
}

/**
 * One SIGTERM to npm start, which stops its children and then the database in order; after a
 * minute, SIGKILL to it and to every child and postmaster the soak saw (each in its own process
 * group or session, so killing npm start alone would leave them running).
 */
async function stopConsole(child: ChildProcess, seen: Map<number, string>) {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = exitOf(child).catch(() => "gone");
    signal(child.pid!, "SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 60_000)))]);
    clearTimeout(timer);
    signal(-child.pid!, "SIGKILL");
  }
  for (const [pid, cmdline] of seen) {
    const info = readProcess(pid);
    // Still the process the soak saw (the same command line), not a pid reused since.
    if (!info || !isLive(info) || info.cmdline !== cmdline) continue;
    signal(-info.pgid, "SIGKILL");
    signal(pid, "SIGKILL");
  }
}
