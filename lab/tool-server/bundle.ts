import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { TOOL_ENTRIES, type ToolEntry } from "./tool-table";

/**
 * The tool server's code and the tools', compiled from the sources in lab/ by esbuild when a
 * server starts (so an edited tool counts from the next lab start, and nothing stale is cached
 * on disk). CommonJS: each tool bundle is a function body the server runs once per call, which
 * gives every call its own module state, as the separate process per call did.
 */

export type ToolBundles = { worker: string; tools: Record<ToolEntry, string> };

const LAB_DIR = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const WORKER_ENTRY = "tool-server/worker.ts";

function esbuildBinary(): string {
  const pkg = createRequire(import.meta.url).resolve("esbuild/package.json");
  return path.join(path.dirname(pkg), "bin", "esbuild");
}

export async function buildToolBundles(): Promise<ToolBundles> {
  const out = await mkdtemp(path.join(os.tmpdir(), "clupilot-lab-tools-"));
  try {
    const entries = [WORKER_ENTRY, ...Object.values(TOOL_ENTRIES)];
    await new Promise<void>((resolve, reject) => {
      execFile(
        esbuildBinary(),
        [
          ...entries.map((entry) => path.join(LAB_DIR, entry)),
          "--bundle",
          "--platform=node",
          "--format=cjs",
          "--target=node20",
          `--outbase=${LAB_DIR}`,
          `--outdir=${out}`,
          "--log-level=error",
        ],
        { maxBuffer: 16 * 1024 * 1024 },
        (error, _stdout, stderr) =>
          error === null
            ? resolve()
            : reject(
                new Error(`lab: building the simulated tools failed: ${stderr || error.message}`),
              ),
      );
    });
    const read = (entry: string) => readFile(path.join(out, entry.replace(/\.ts$/, ".js")), "utf8");
    const tools = {} as Record<ToolEntry, string>;
    for (const [name, entry] of Object.entries(TOOL_ENTRIES))
      tools[name as ToolEntry] = await read(entry);
    return { worker: await read(WORKER_ENTRY), tools };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}
