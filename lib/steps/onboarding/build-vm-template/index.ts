import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { requiredTemplateVmids } from "@/lib/catalog/required-template-vmids";
import { readSourcePosition, type SourcePosition } from "@/lib/logs/append";
import type { RemoteExec } from "@/lib/logs/tail-remote-file";
import {
  advance,
  fail,
  poll,
  pollUntil,
  type Outcome,
  type Step,
  type StepContext,
} from "@/lib/pipeline/step";
import type { ProxmoxClient } from "@/lib/proxmox/client";
import type { OnboardingConfig } from "../config";
import type { HostServices } from "../services";
import { withPermanentSshFailures } from "../ssh-failure";
import {
  BUILD_SIGNATURE,
  buildEnvFile,
  CLEAR_STATUS,
  DRIVER_NAME,
  installUploadCommand,
  killBuildCommand,
  parseStatus,
  READ_STATUS,
  RESOLVE_BUILD_DIR,
  START_REFUSED_EXIT,
  startBuildCommand,
  watchBuildCommand,
  type ParsedStatus,
} from "./commands";
import { decideWithDeadline, decideWithoutDeadline } from "./decide";
import { alreadyInPlace } from "../../../pipeline/already-in-place";
import { copyHostFile, quietRemote } from "../../remote-job/host-file-log";
import { takeSignature } from "../../remote-job/remote-watch";
import { describeKill } from "../../remote-job/detached-process";

export const BUILD_VM_TEMPLATE = "BuildVmTemplate";

/** Run-context keys. The deadline (epoch ms) says "this chain started or adopted a build". */
export const DEADLINE_KEY = "buildVmTemplate.deadline";
/** The host's absolute build dir, resolved once when the build is started or adopted. */
export const BUILD_DIR_KEY = "buildVmTemplate.buildDir";

/** The scripts uploaded byte for byte, with their modes on the host. */
export const SCRIPTS = [
  { name: "template.sh", mode: 0o644 },
  { name: DRIVER_NAME, mode: 0o755 },
] as const;

export const DEFAULT_SCRIPTS_DIR = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../../deploy/bootstrap/lib",
);

export type BuildVmTemplateOptions = {
  /** Where template.sh and template-run.sh are read from. Default: deploy/bootstrap/lib. */
  scriptsDir?: string;
  /** The engine's backstop above the step's own deadline. Default 3600 s. */
  maxDurationSeconds?: number;
};

/** The engine's backstop (maxDuration) when the options do not say otherwise. */
export const MAX_DURATION_SECONDS = 3600;

/**
 * The build's own deadline: the configured one, capped below maxDuration by a tenth (at least
 * the poll interval), so the step's own give-up path (kill, then clean up) always runs before
 * the engine fails the run.
 */
export function buildDeadlineSeconds(
  configured: number,
  maxDurationSeconds: number,
  pollSeconds: number,
): number {
  const margin = Math.max(maxDurationSeconds / 10, pollSeconds);
  return Math.max(1, Math.min(configured, maxDurationSeconds - margin));
}

/** SSH commands a poll-rate command may take beyond its own waiting. */
const COMMAND_SLACK_MS = 30_000;

/**
 * BuildVmTemplate: every VMID the catalog requires is a template (docs/build-vm-template.md).
 * Builds only the missing VMIDs by running deploy/bootstrap/lib/template-run.sh detached on the
 * host, then follows it through its status files. Needs a host with Proxmox installed and the
 * console's API token and certificate pin stored (CreateApiToken, VerifyProxmoxApi).
 */
export function buildVmTemplate(
  config: OnboardingConfig,
  options: BuildVmTemplateOptions = {},
): Step<HostServices> {
  type Ctx = StepContext<HostServices>;
  const database = (ctx: Ctx) => ctx.services.db;
  const scriptsDir = options.scriptsDir ?? DEFAULT_SCRIPTS_DIR;
  const maxDurationSeconds = options.maxDurationSeconds ?? MAX_DURATION_SECONDS;
  // Read per use: the configuration object is the live one (tests shorten it between runs).
  const ownDeadlineSeconds = () =>
    buildDeadlineSeconds(
      config.templateBuildDeadlineSeconds,
      maxDurationSeconds,
      config.pollSeconds,
    );

  const readStatus = async (remote: RemoteExec): Promise<ParsedStatus> => {
    const result = await remote.exec(READ_STATUS, { timeoutMs: COMMAND_SLACK_MS });
    if (result.code !== 0)
      throw new Error(`reading the template build's status failed: ${result.stderr.trim()}`);
    return parseStatus(result.stdout);
  };

  /**
   * Polls, and has the worker watch the status files meanwhile (docs/pipeline.md, "Waiting"):
   * the next visit comes as soon as the state or the driver's liveness differ from what this
   * one read, and after the poll interval at the latest. Until then the watch shows each new
   * phase and streams build.log into the run log from `log` (where this visit's copy ended; read
   * from the run log's position when the visit made none).
   */
  const pollWatching = async (
    ctx: Ctx,
    signature: string | null,
    phase: string,
    { shownPhase, log }: { shownPhase?: string; log?: SourcePosition } = {},
  ): Promise<Outcome> => {
    if (signature === null) return poll(config.pollSeconds, phase);
    const buildDir = ctx.context.get<string>(BUILD_DIR_KEY);
    const from =
      log ??
      (buildDir === undefined
        ? undefined
        : await readSourcePosition(database(ctx), ctx.runId, buildLogPath(buildDir)));
    const waiter = ctx.services.watchCommand(
      "the template build's status",
      watchBuildCommand(signature, config.pollSeconds, {
        phase: shownPhase,
        log: from && { path: from.path, offset: from.offset, identity: from.inode },
      }),
      config.pollSeconds + COMMAND_SLACK_MS / 1000,
      {
        phase: (shown) => shown.trim() || RUNNING_PHASE,
        ...(from === undefined ? {} : { log: { step: BUILD_VM_TEMPLATE, from } }),
      },
    );
    return pollUntil(waiter, config.pollSeconds, phase);
  };

  /** The host's build.log into the run log by byte offset (host-file-log.ts). */
  const tailLog = (ctx: Ctx, remote: RemoteExec, buildDir: string, finish = false) =>
    copyHostFile(ctx, { step: BUILD_VM_TEMPLATE, path: buildLogPath(buildDir), finish }, remote);

  const resolveBuildDir = async (remote: RemoteExec): Promise<string> => {
    const result = await remote.exec(RESOLVE_BUILD_DIR, { timeoutMs: COMMAND_SLACK_MS });
    const dir = result.stdout.trim();
    if (result.code !== 0 || !dir.startsWith("/"))
      throw new Error(`resolving the build dir on the host failed: ${result.stderr.trim()}`);
    return dir;
  };

  const forget = (ctx: Ctx) => {
    ctx.context.delete(DEADLINE_KEY);
    ctx.context.delete(BUILD_DIR_KEY);
  };

  /**
   * Kills every process of the build (the driver's exact cmdline, the members' session and
   * mark) before anything is cleared: never clear beside a build that still runs. Survivors are
   * named in the log and in what it returns; a kill that could not run at all throws.
   */
  const stopBuild = async (ctx: Ctx): Promise<string> => {
    const killed = await ctx.services.exec(killBuildCommand(), { timeoutMs: 60_000 });
    const said = killed.stdout.trim().split("\n").pop() ?? "";
    if (killed.code !== 0 || said === "") {
      throw new Error(
        `stopping the template build on the host failed (exit ${killed.code}: ${killed.stderr.trim()}); its status was left as it is`,
      );
    }
    const what = describeKill(said);
    ctx.log(`template build processes on the host: ${what}`);
    return what;
  };

  const clearStatus = async (ctx: Ctx) => {
    const cleared = await ctx.services.exec(CLEAR_STATUS, { timeoutMs: COMMAND_SLACK_MS });
    if (cleared.code !== 0)
      throw new Error(`clearing the template build's status failed: ${cleared.stderr.trim()}`);
  };

  /**
   * fail(): whatever the reason, every process of the build goes first (a virt-customize that
   * outlived its driver included), then the status files and the deadline, so a Retry is a
   * first visit again.
   */
  const failBuild = async (
    ctx: Ctx,
    remote: RemoteExec,
    buildDir: string,
    status: ParsedStatus,
    reason: string,
  ): Promise<Outcome> => {
    const stopped = await stopBuild(ctx);
    const tailed = await tailLog(ctx, remote, buildDir, true);
    if (tailed === null) for (const line of status.logTail) ctx.log(`build.log: ${line}`);
    await clearStatus(ctx);
    forget(ctx);
    const survivors = stopped.startsWith("NOT") ? ` Its processes were ${stopped}.` : "";
    return fail(
      `${reason}.${survivors} Retry starts a new build; a verified image on the host is reused.`,
    );
  };

  /** Abort and engine-declared failures: kill, copy the log's end, clear, forget. */
  const cleanUp = async (ctx: Ctx) => {
    await stopBuild(ctx);
    const buildDir = ctx.context.get<string>(BUILD_DIR_KEY);
    if (buildDir) await tailLog(ctx, await quietRemote(ctx.services), buildDir, true);
    await clearStatus(ctx);
    forget(ctx);
  };

  /** Adopts a live build: our own deadline, the log so far, then the phase read after it. */
  const adopt = async (ctx: Ctx, remote: RemoteExec, status: ParsedStatus): Promise<Outcome> => {
    const buildDir = await resolveBuildDir(remote);
    ctx.context.set(DEADLINE_KEY, Date.now() + ownDeadlineSeconds() * 1000);
    ctx.context.set(BUILD_DIR_KEY, buildDir);
    ctx.log(
      `a template build is already running on the host (phase: ${status.phase ?? "unknown"}${status.state === "running" ? "" : `, state file: ${status.state ?? "missing"}`}); adopting it instead of starting a second one`,
    );
    const copied = await tailLog(ctx, remote, buildDir);
    const now = await readStatus(remote);
    return pollWatching(ctx, now.signature, phaseLine(now), {
      shownPhase: now.phase ?? "",
      log: copied?.position,
    });
  };

  const start = async (ctx: Ctx, remote: RemoteExec, missing: number[]): Promise<Outcome> => {
    const buildDir = await resolveBuildDir(remote);
    const session = await ctx.services.ssh();
    const host = await ctx.services.host();
    for (const script of SCRIPTS) {
      const file = path.join(/* turbopackIgnore: true */ scriptsDir, script.name);
      // Uploaded to the host at run time, not part of the bundle: the bundler must not trace it.
      const bytes = await readFile(/* turbopackIgnore: true */ file);
      await upload(ctx, session, host.sshUser, `${buildDir}/${script.name}`, bytes, script.mode);
    }
    const env = buildEnvFile({
      vmids: missing,
      imageUrl: config.cloudImageUrl,
      sha512sumsUrl: config.cloudImageSumsUrl,
    });
    await upload(ctx, session, host.sshUser, `${buildDir}/build.env`, Buffer.from(env), 0o600);
    // The signature after the driver's pid: the first watch's baseline.
    const started = await ctx.services.exec(`${startBuildCommand(buildDir)}\n${BUILD_SIGNATURE}`, {
      timeoutMs: 60_000,
    });
    if (started.code === START_REFUSED_EXIT)
      throw new Error(
        `a template build driver still runs on the host (${started.stderr.trim()}); the next visit adopts it`,
      );
    if (started.code !== 0)
      throw new Error(`starting the template build failed: ${started.stderr.trim()}`);
    const { signature, rest } = takeSignature(started.stdout);
    const pid = rest.trim();
    ctx.context.set(DEADLINE_KEY, Date.now() + ownDeadlineSeconds() * 1000);
    ctx.context.set(BUILD_DIR_KEY, buildDir);
    if (ownDeadlineSeconds() < config.templateBuildDeadlineSeconds)
      ctx.log(
        `the build's deadline is ${deadlineText(ownDeadlineSeconds())}, not the configured ${deadlineText(config.templateBuildDeadlineSeconds)}: it must end before the step's maximum of ${deadlineText(maxDurationSeconds)}`,
      );
    ctx.log(
      pid
        ? `template build for VMID ${missing.join(", ")} started (driver pid ${pid}, detached)`
        : `template build for VMID ${missing.join(", ")} started, but no pid file appeared within 15 s`,
    );
    // The driver's first phase is shown as soon as the watch sees it.
    return pollWatching(ctx, signature, "template build started", { shownPhase: "" });
  };

  return {
    name: BUILD_VM_TEMPLATE,
    // The own deadline (config.templateBuildDeadlineSeconds, 45 min) lives in the run context and
    // gives up first; this is only the engine's backstop above it.
    maxDuration: () => maxDurationSeconds,

    visit: (ctx) =>
      withPermanentSshFailures(async () => {
        // 1. No published catalog → advance, nothing uploaded.
        const required = await requiredTemplateVmids(database(ctx));
        if (!required.catalogPublished) {
          forget(ctx);
          return alreadyInPlace(ctx, "no published catalog: no template required yet");
        }
        // 2. Ask for the attribute, not existence. isTemplate throws when it cannot ask, and a
        //    thrown visit is retried: "could not ask" never reads as "missing".
        const proxmox = await ctx.services.proxmox();
        const missing = await missingTemplates(proxmox, required.vmids);
        // 2b. On a cluster a VMID is the cluster's: one another member holds is never built
        //     over (nor destroyed) from here, template or not (issue 31).
        const heldElsewhere = await heldByOtherMembers(proxmox, missing);
        if (heldElsewhere.length > 0) {
          return fail(
            `${heldElsewhere.map((h) => `VMID ${h.vmid} exists in the cluster on ${h.node} and is not a template`).join("; ")}: the console builds no template over a guest another member holds, and destroys nothing. Free the VMID or convert it there, then Retry.`,
          );
        }
        if (missing.length === 0) {
          // Proxmox reports the templates before our driver has finished its own checks: while
          // the driver we started still lives, wait for it, so no later build ever starts
          // beside it (two drivers would share the status files).
          const ownDeadline = ctx.context.get<number>(DEADLINE_KEY);
          if (ownDeadline !== undefined && ctx.visit > 1) {
            const remote = await quietRemote(ctx.services);
            const status = await readStatus(remote);
            if (status.driverAlive && status.state !== "failed") {
              // The driver's end changes its liveness: the watch sees it within a round.
              if (Date.now() < ownDeadline)
                return pollWatching(ctx, status.signature, phaseLine(status), {
                  shownPhase: status.phase ?? "",
                });
              // The templates stand, but the driver would not end: it goes, they stay.
              ctx.log(
                `Proxmox reports the templates, but the build's driver was still running after its deadline of ${deadlineText(ownDeadlineSeconds())}; stopping it`,
              );
              await cleanUp(ctx);
            } else {
              // The driver has ended: the rest of its log belongs in this run's.
              const buildDir = ctx.context.get<string>(BUILD_DIR_KEY);
              if (buildDir) await tailLog(ctx, remote, buildDir, true);
            }
          }
          forget(ctx);
          const found =
            required.vmids.length === 0
              ? "the catalog requires no template now"
              : `VMID ${required.vmids.join(", ")} ${required.vmids.length === 1 ? "is a template" : "are templates"}`;
          // After this run's own build the templates are new, not found in place.
          return ctx.visit > 1 ? advance(found) : alreadyInPlace(ctx, found);
        }

        const remote = await quietRemote(ctx.services);
        // 4. Did THIS chain start anything? A deadline from an earlier chain (a failure the
        //    engine declared, or a crash before our own clean-up) answers no question of this one.
        let deadline = ctx.context.get<number>(DEADLINE_KEY);
        if (ctx.visit === 1 && deadline !== undefined) {
          forget(ctx);
          deadline = undefined;
        }

        if (deadline === undefined) {
          const status = await readStatus(remote);
          const decision = decideWithoutDeadline(status);
          if (decision.kind === "adopt") return adopt(ctx, remote, status);
          // 3. Build only the missing list: the build destroys a VMID before creating it.
          return start(ctx, remote, missing);
        }

        const buildDir = ctx.context.get<string>(BUILD_DIR_KEY) ?? (await resolveBuildDir(remote));
        if (Date.now() >= deadline) {
          const status = await readStatus(remote);
          return failBuild(
            ctx,
            remote,
            buildDir,
            status,
            `the template build did not finish within ${deadlineText(ownDeadlineSeconds())} (last phase: ${status.phase ?? "unknown"}); it was stopped`,
          );
        }

        // The log first, the status after it: the phase line this visit shows is never older
        // than the log's last line (the driver writes the phase file before the log line).
        const copied = await tailLog(ctx, remote, buildDir);
        const status = await readStatus(remote);
        if (status.state === "ok") {
          // The driver may have finished after step 2 asked: ask the API again.
          const still = await missingTemplates(proxmox, missing);
          if (still.length === 0) {
            await tailLog(ctx, remote, buildDir, true);
            forget(ctx);
            return advance(`built VMID ${missing.join(", ")}`);
          }
        }
        const decision = decideWithDeadline(status);
        if (decision.kind === "fail")
          return failBuild(ctx, remote, buildDir, status, decision.reason);
        return pollWatching(ctx, status.signature, phaseLine(status), {
          shownPhase: status.phase ?? "",
          log: copied?.position,
        });
      }),

    async abort(ctx) {
      // Kill first (only processes proven ours), then clean up: clearing the files alone would
      // let the old build grind on beside the next one.
      await cleanUp(ctx);
    },

    async cleanup(ctx) {
      // The run failed while here for a reason the visit did not return (maxDuration, attempts
      // used up): a build this run started or adopted must not grind on alone.
      if (ctx.context.get<number>(DEADLINE_KEY) === undefined) return;
      await cleanUp(ctx);
    },
  };
}

/** Missing VMIDs that a guest on another node of the cluster holds. */
async function heldByOtherMembers(
  proxmox: ProxmoxClient,
  vmids: number[],
): Promise<{ vmid: number; node: string }[]> {
  const held: { vmid: number; node: string }[] = [];
  for (const vmid of vmids) {
    const guest = await proxmox.clusterGuest(vmid);
    if (guest !== null && guest.node !== proxmox.node) held.push({ vmid, node: guest.node });
  }
  return held;
}

/** The required VMIDs that are not usable templates, in order; throws when it cannot ask. */
async function missingTemplates(proxmox: ProxmoxClient, vmids: number[]): Promise<number[]> {
  const missing: number[] = [];
  for (const vmid of vmids) if (!(await proxmox.isTemplate(vmid))) missing.push(vmid);
  return missing;
}

function deadlineText(seconds: number): string {
  return seconds >= 120 && seconds % 60 === 0 ? `${seconds / 60} minutes` : `${seconds} s`;
}

const RUNNING_PHASE = "template build running";

function phaseLine(status: ParsedStatus): string {
  return status.phase ?? RUNNING_PHASE;
}

function buildLogPath(buildDir: string): string {
  return `${buildDir}/build.log`;
}

/**
 * Atomic, SHA-256-checked upload. For a non-root SSH user the file is received into its own
 * temporary dir and moved into place as root, so the bytes are still checked on the host.
 */
async function upload(
  ctx: StepContext<HostServices>,
  session: Awaited<ReturnType<HostServices["ssh"]>>,
  sshUser: string,
  remotePath: string,
  bytes: Buffer,
  mode: number,
): Promise<void> {
  if (sshUser === "root") {
    await session.upload(remotePath, bytes, { mode });
  } else {
    const staging = `/tmp/clupilot-upload-${process.pid}-${Date.now()}-${path.posix.basename(remotePath)}`;
    await session.upload(staging, bytes, { mode });
    const moved = await ctx.services.exec(installUploadCommand(staging, remotePath));
    if (moved.code !== 0)
      throw new Error(`moving ${remotePath} into place failed: ${moved.stderr.trim()}`);
  }
  ctx.log(
    `uploaded ${remotePath} (${bytes.length} bytes, sha256 ${createHash("sha256").update(bytes).digest("hex")}, verified on the host)`,
  );
}
