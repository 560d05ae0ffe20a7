import { execFileSync } from "node:child_process";

import { connectSsh, type ExecResult, type SshSession } from "@/lib/ssh/client";

import type { LabNode } from "./index";

/**
 * Test helpers: commands on a lab node over real SSH through lib/ssh, as the console runs them.
 * Lab tests, step tests and benches share these, so each does not grow its own connect block.
 */

/** A lab node, or the node description `lab/cli.ts` prints: what it takes to log in. */
export type LabSshTarget = {
  ssh: { host: string; port: number; username: string; password: string };
};

export type LabSessionOptions = {
  /** The host key to insist on; null (the default) accepts whatever key the node offers. */
  pinnedHostKey?: string | null;
  /** lib/ssh's default when left out. */
  readyTimeoutMs?: number;
};

export type LabExecOptions = LabSessionOptions & {
  /** 30 s when left out: long enough for a busy machine, short enough to fail a hung test. */
  timeoutMs?: number;
  stdin?: string;
};

/** Opens an SSH session to the node as its password user; the caller closes it. */
export function labSession(
  node: LabSshTarget,
  options: LabSessionOptions = {},
): Promise<SshSession> {
  return connectSsh({
    host: node.ssh.host,
    port: node.ssh.port,
    username: node.ssh.username,
    auth: { kind: "password", password: node.ssh.password },
    pinnedHostKey: options.pinnedHostKey ?? null,
    ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
  });
}

/** Runs one command in a session of its own and returns its result, whatever the exit code. */
export async function labExec(
  node: LabSshTarget,
  command: string,
  options: LabExecOptions = {},
): Promise<ExecResult> {
  const session = await labSession(node, options);
  try {
    return await session.exec(command, {
      timeoutMs: options.timeoutMs ?? 30_000,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    });
  } finally {
    session.close();
  }
}

/** Like labExec() but throws unless the command exits 0; returns stdout. */
export async function labExecOk(
  node: LabSshTarget,
  command: string,
  options: LabExecOptions = {},
): Promise<string> {
  const result = await labExec(node, command, options);
  if (result.code !== 0) {
    throw new Error(`${command} → ${String(result.code)}: ${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

/**
 * Runs a program on the node as its root shell would (inside the node, its environment, in its
 * home), without SSH, for test set-up: a simulated tool (`pveum`, `qm`) or anything else.
 * Returns stdout; throws on a non-zero exit.
 */
export function runOnNode(
  node: Pick<LabNode, "command" | "env">,
  program: string,
  args: readonly string[],
): string {
  const { file, args: argv } = node.command([program, ...args]);
  return execFileSync(file, argv, { env: { ...node.env } as NodeJS.ProcessEnv }).toString();
}
