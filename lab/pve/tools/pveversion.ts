import fs from "node:fs";
import path from "node:path";

import { readInstalled } from "../../debian/dpkg-status";
import { labDir } from "../../debian/lab-state";
import { PVE_PACKAGES, PVE_VERSION } from "../seed";
import { CliExit, out, runTool, toolContext } from "./common";

/** Simulated `pveversion [-v]`: versions from the lab's dpkg status, kernel from `.lab/kernel`. */

function main(): void {
  const ctx = toolContext("pveversion");
  const args = process.argv.slice(2);
  const verbose = args.some((a) => a === "-v" || a === "--verbose");
  const unknown = args.find((a) => a !== "-v" && a !== "--verbose");
  if (unknown !== undefined)
    throw new CliExit(
      255,
      `Unknown option: ${unknown.replace(/^-+/, "")}\nUSAGE: pveversion [--verbose]\n`,
    );
  let kernel = "6.17.2-1-pve";
  try {
    kernel =
      fs.readFileSync(path.join(labDir(ctx.root), "kernel"), "utf8").split("\n")[0] || kernel;
  } catch {
    // default
  }
  const installed = readInstalled(ctx.root);
  const manager = installed.get("pve-manager")?.version ?? PVE_VERSION.version;
  if (!verbose) {
    out(`pve-manager/${manager}/${PVE_VERSION.repoid} (running kernel: ${kernel})\n`);
    return;
  }
  let text = `proxmox-ve: ${installed.get("proxmox-ve")?.version ?? "not correctly installed"} (running kernel: ${kernel})\n`;
  text += `pve-manager: ${manager} (running version: ${manager}/${PVE_VERSION.repoid})\n`;
  for (const p of PVE_PACKAGES) {
    if (p.name === "proxmox-ve" || p.name === "pve-manager") continue;
    const v = installed.get(p.name)?.version;
    text += `${p.name}: ${v ?? "not correctly installed"}\n`;
  }
  out(text);
}

runTool(main);
