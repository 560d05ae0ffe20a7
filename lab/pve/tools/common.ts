import { isInstalled } from "../../debian/dpkg-status";
import { TOOL_ROOT } from "../../debian/lab-state";
import { createPmxcfs } from "../seed";
import { nodeName, pveInstalled } from "../state";

/**
 * Shared plumbing of the simulated Proxmox CLI tools: the lab root, argument parsing in the
 * style of PVE::CLIHandler (`--opt value`, `-opt value`, unique prefixes of option names,
 * boolean flags with an optional 0/1), and errors the way the real tools print them
 * (message on stderr, exit 255 for a perl `die`).
 */

export class CliExit extends Error {
  constructor(
    readonly code: number,
    message = "",
  ) {
    super(message);
  }
}

export type ToolContext = { root: string; node: string; tool: string };

/** The tool's context; outside a Proxmox node the command does not exist (as in bash). */
export function toolContext(tool: string): ToolContext {
  const root = TOOL_ROOT;
  if (!isInstalled(root, "pve-manager") && !isInstalled(root, "proxmox-ve")) {
    process.stderr.write(`bash: line 1: ${tool}: command not found\n`);
    process.exit(127);
  }
  const node = nodeName(root);
  // Installed by the simulated apt-get: pmxcfs comes up with the node's first start.
  if (!pveInstalled(root)) createPmxcfs(root, { node });
  return { root, node, tool };
}

/** A perl `die` in a PVE CLI: the message on stderr, exit 255. */
export function die(message: string): never {
  throw new CliExit(255, message.endsWith("\n") ? message : `${message}\n`);
}

/** `400 Parameter verification failed.` with one line per parameter, then the usage line. */
export function paramError(errors: Record<string, string>, usage: string): never {
  const lines = Object.entries(errors)
    .map(([k, v]) => `${k}: ${v}\n`)
    .join("");
  throw new CliExit(255, `400 Parameter verification failed.\n${lines}\n${usage}\n`);
}

export type OptionSpec = {
  /** Fixed option names → kind. */
  options: Record<string, "string" | "boolean">;
  /** Indexed options (`scsi0`, `net1`, …), always strings. */
  patterns?: RegExp[];
  usage: string;
};

export type ParsedArgs = { positional: string[]; options: Map<string, string> };

export function parseArgs(argv: string[], spec: OptionSpec): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!/^--?[a-zA-Z]/.test(arg)) {
      positional.push(arg);
      continue;
    }
    let name = arg.replace(/^--?/, "");
    let inline: string | undefined;
    const eq = name.indexOf("=");
    if (eq >= 0) {
      inline = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    const resolved = resolveOption(name, spec);
    if (resolved === null) {
      throw new CliExit(
        255,
        `Unknown option: ${name}\n400 unable to parse option\n${spec.usage}\n`,
      );
    }
    const kind = spec.options[resolved] ?? "string";
    let value: string;
    if (inline !== undefined) value = inline;
    else if (kind === "boolean") {
      const next = argv[i + 1];
      if (next !== undefined && /^(0|1|true|false|yes|no|on|off)$/i.test(next)) {
        value = /^(1|true|yes|on)$/i.test(next) ? "1" : "0";
        i++;
      } else value = "1";
    } else {
      const next = argv[i + 1];
      if (next === undefined) {
        throw new CliExit(
          255,
          `Option ${resolved} requires an argument\n400 unable to parse option\n${spec.usage}\n`,
        );
      }
      value = next;
      i++;
    }
    options.set(resolved, value);
  }
  return { positional, options };
}

function resolveOption(name: string, spec: OptionSpec): string | null {
  if (name in spec.options) return name;
  if (spec.patterns?.some((re) => re.test(name))) return name;
  const prefixed = Object.keys(spec.options).filter((o) => o.startsWith(name));
  return prefixed.length === 1 ? prefixed[0]! : null;
}

/** Runs a tool's main, turning CliExit into the process exit (stderr message, code). */
export function runTool(main: () => void | Promise<void>): void {
  Promise.resolve()
    .then(main)
    .then(
      () => process.exit(0),
      (error: unknown) => {
        if (error instanceof CliExit) {
          if (error.message) process.stderr.write(error.message);
          process.exit(error.code);
        }
        process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
        process.exit(255);
      },
    );
}

export function out(text: string): void {
  process.stdout.write(text);
}

export function parseVmid(text: string | undefined, usage: string): number {
  if (text === undefined) {
    throw new CliExit(255, `400 not enough arguments\n${usage}\n`);
  }
  if (!/^\d+$/.test(text) || Number(text) < 100 || Number(text) > 999_999_999) {
    paramError({ vmid: "invalid format - value does not look like a valid VM ID" }, usage);
  }
  return Number(text);
}

/** Renders rows as the box-drawing table PVE's CLI prints for `--output-format text`. */
export function boxTable(columns: string[], rows: string[][]): string {
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (l: string, m: string, r: string, fill: string) =>
    `${l}${widths.map((w) => fill.repeat(w + 2)).join(m)}${r}\n`;
  const row = (cells: string[]) =>
    `│${cells.map((c, i) => ` ${c.padEnd(widths[i]!)} `).join("│")}│\n`;
  let text = line("┌", "┬", "┐", "─") + row(columns) + line("╞", "╪", "╡", "═");
  rows.forEach((r, i) => {
    text += row(r);
    if (i < rows.length - 1) text += line("├", "┼", "┤", "─");
  });
  return text + line("└", "┴", "┘", "─");
}

export function printFormatted(
  format: string | undefined,
  data: unknown,
  text: () => string,
): void {
  if (format === "json") out(`${JSON.stringify(data)}\n`);
  else if (format === "json-pretty") out(`${JSON.stringify(data, null, 4)}\n`);
  else out(text());
}
