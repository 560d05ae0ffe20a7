/**
 * The watch loop's reports (remote-watch.ts) in bash and in dash (a non-root user's `sudo -n sh
 * -c`): the shown file's new lines, and the followed file's lines with the exact byte offset
 * they end at — what the run log saves as the file's position, so the next visit's tail goes
 * on from there.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { sh } from "@/lib/ssh";
import {
  printSignature,
  takeSignature,
  watchStatusCommand,
  WatchOutput,
  type FollowedFile,
  type WatchEvent,
} from "./remote-watch";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-follow-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

let serial = 0;
function statusDir() {
  const status = path.join(dir, `status-${++serial}`);
  fs.mkdirSync(status);
  fs.writeFileSync(path.join(status, "state"), "running\n");
  fs.writeFileSync(path.join(status, "phase"), "fetch image\n");
  return status;
}

const watchedIn = (status: string) => ({
  dir: sh`${status}`,
  files: ["state"],
  shown: "phase",
  pidFiles: [],
});

function run(shell: string, script: string) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(shell, ["-c", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.on("error", reject);
    child.on("close", () => resolve(out));
  });
}

/** The identity the tail stores for a file (lib/logs/tail-remote-file.ts): inode|cksum of 256 bytes. */
async function identityOf(shell: string, file: string): Promise<string> {
  const out = await run(
    shell,
    `f=${sh`${file}`}; printf '%s|%s\\n' "$(stat -L -c %i "$f")" "$(head -c 256 "$f" | cksum)"`,
  );
  return out.trim();
}

/**
 * Starts the loop; resolves with every event it reported (and when) once it has ended. The
 * test acts on the files meanwhile through `during`.
 */
async function watch(
  shell: string,
  status: string,
  seconds: number,
  followed: FollowedFile | undefined,
  during: (events: WatchEvent[]) => Promise<void>,
) {
  const watched = watchedIn(status);
  const baseline = takeSignature(await run(shell, printSignature(watched))).signature!;
  const output = new WatchOutput();
  const events: WatchEvent[] = [];
  const command = watchStatusCommand(watched, baseline, seconds, {
    followed,
    shownSeen: "fetch image",
  });
  const child = spawn(shell, ["-c", command], { stdio: ["ignore", "pipe", "inherit"] });
  child.stdout.on("data", (chunk: Buffer) => events.push(...output.push(chunk)));
  const closed = new Promise<void>((resolve) => child.on("close", () => resolve()));
  try {
    await during(events);
  } finally {
    await closed;
  }
  return { events, changed: output.changed() };
}

async function until(what: string, test: () => boolean, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

const lines = (events: WatchEvent[]) => events.flatMap((e) => (e.kind === "line" ? [e.text] : []));
const lastAt = (events: WatchEvent[]) =>
  events.flatMap((e) => (e.kind === "at" ? [e.offset] : [])).at(-1);

describe.each(["bash", "dash"])("the watch loop's reports in %s", (shell) => {
  it("a new phase is reported and the watch goes on; a new state ends it", async () => {
    const status = statusDir();
    const { events, changed } = await watch(shell, status, 20, undefined, async (seen) => {
      fs.writeFileSync(path.join(status, "phase"), "customise image\n");
      await until("the new phase", () => seen.some((e) => e.kind === "shown"));
      fs.writeFileSync(path.join(status, "phase"), "import disk\n");
      await until("the second phase", () => seen.filter((e) => e.kind === "shown").length === 2);
      fs.writeFileSync(path.join(status, "state"), "ok\n");
    });
    expect(changed).toBe(true);
    expect(events.filter((e) => e.kind === "shown")).toEqual([
      { kind: "shown", text: "customise image" },
      { kind: "shown", text: "import disk" },
    ]);
  }, 30_000);

  it("a phase new since the visit read it (before the watch began) is reported in the first round, and the watch goes on", async () => {
    const status = statusDir();
    const watched = watchedIn(status);
    const baseline = takeSignature(await run(shell, printSignature(watched))).signature!;
    fs.writeFileSync(path.join(status, "phase"), "verify structure\n");
    const started = Date.now();
    const out = await run(
      shell,
      watchStatusCommand(watched, baseline, 2.5, { shownSeen: "fetch image" }),
    );
    const output = new WatchOutput();
    const events = output.push(Buffer.from(out));
    expect(events.filter((e) => e.kind === "shown")).toEqual([
      { kind: "shown", text: "verify structure" },
    ]);
    expect(output.changed()).toBe(false);
    expect(Date.now() - started).toBeGreaterThan(1000);
  }, 30_000);

  it("streams the lines appended after the console's offset, each batch with the byte offset it ends at; an unterminated line waits for its newline", async () => {
    const status = statusDir();
    const log = path.join(status, "build.log");
    fs.writeFileSync(log, "already copied ünïcödé\n");
    const followed = {
      path: log,
      offset: fs.statSync(log).size,
      identity: await identityOf(shell, log),
    };
    const { events } = await watch(shell, status, 20, followed, async (seen) => {
      fs.appendFileSync(log, "\u001b[36mcustomise\u001b[0m ✓\nprogress 10%\rprogress 90%");
      await until("the first line", () => lines(seen).length === 1);
      fs.appendFileSync(log, "\rprogress 100%\nlast line\n");
      await until("the rest", () => lines(seen).length === 3);
      fs.writeFileSync(path.join(status, "state"), "ok\n");
    });
    expect(lines(events)).toEqual([
      "\u001b[36mcustomise\u001b[0m ✓",
      "progress 10%\rprogress 90%\rprogress 100%",
      "last line",
    ]);
    // Byte offsets, not characters: each one where a line of the file ends (which batches the
    // lines came in is the machine's timing), the last one the file's size.
    const ends = ["already copied ünïcödé", ...lines(events)].map((_, i, all) =>
      Buffer.byteLength(all.slice(0, i + 1).join("\n") + "\n"),
    );
    const offsets = events.flatMap((e) => (e.kind === "at" ? [e.offset] : []));
    expect(offsets.length).toBeGreaterThan(0);
    for (const offset of offsets) expect(ends.slice(1)).toContain(offset);
    expect(lastAt(events)).toBe(fs.statSync(log).size);
    expect(events.some((e) => e.kind === "file")).toBe(false);
  }, 30_000);

  it("a file that appears only after the watch began, or is not the one the console read (another inode): streamed from byte 0 with its identity", async () => {
    for (const variant of ["appears later", "recreated"] as const) {
      const status = statusDir();
      const log = path.join(status, "build.log");
      let followed: FollowedFile = { path: log, offset: 0, identity: null };
      if (variant === "recreated") {
        fs.writeFileSync(log, "the old build's log\n");
        followed = { path: log, offset: 20, identity: await identityOf(shell, log) };
        fs.renameSync(log, `${log}.previous`);
      }
      const { events } = await watch(shell, status, 20, followed, async (seen) => {
        await new Promise((resolve) => setTimeout(resolve, 700));
        fs.writeFileSync(log, "new build\n");
        await until("its line", () => lines(seen).length === 1);
        fs.writeFileSync(path.join(status, "state"), "failed\n");
      });
      const file = events.find((e) => e.kind === "file");
      expect(file, variant).toEqual({ kind: "file", identity: await identityOf(shell, log) });
      expect(events.indexOf(file!)).toBeLessThan(events.findIndex((e) => e.kind === "line"));
      expect(lines(events)).toEqual(["new build"]);
      expect(lastAt(events)).toBe(10);
    }
  }, 30_000);

  it("a log line that reads like the loop's verdict is only a log line", async () => {
    const status = statusDir();
    const log = path.join(status, "build.log");
    fs.writeFileSync(log, "");
    const followed = { path: log, offset: 0, identity: await identityOf(shell, log) };
    const { events, changed } = await watch(shell, status, 2.5, followed, async (seen) => {
      fs.appendFileSync(log, "clupilot-watch: changed\n");
      await until("the line", () => lines(seen).length === 1);
    });
    expect(lines(events)).toEqual(["clupilot-watch: changed"]);
    expect(changed).toBe(false);
  }, 30_000);
});
