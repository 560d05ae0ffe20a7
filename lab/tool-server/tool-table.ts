/**
 * Which entry module answers which tool name. Each entry is a script as it ran as its own Node
 * process: it reads `process.argv.slice(2)`. The Debian and image entries dispatch on the tool
 * name themselves (their argv starts with it); each Proxmox tool is its own script.
 */

/** Entry modules, relative to lab/ (esbuild's outbase): the bundle of each is loaded once. */
export const TOOL_ENTRIES = {
  debian: "debian/tools/main.ts",
  image: "image/tools/main.ts",
  qm: "pve/tools/qm.ts",
  pvesm: "pve/tools/pvesm.ts",
  pvesh: "pve/tools/pvesh.ts",
  pveum: "pve/tools/pveum.ts",
  pveversion: "pve/tools/pveversion.ts",
  pvecm: "pve/tools/pvecm.ts",
} as const;

export type ToolEntry = keyof typeof TOOL_ENTRIES;

const IMAGE_TOOLS = new Set([
  "virt-customize",
  "virt-ls",
  "virt-cat",
  "virt-filesystems",
  "guestfish",
  "qemu-img",
]);

/**
 * The entry and the arguments after `argv[1]` for `tool args…`. Every name that is neither a
 * Proxmox nor an image tool goes to the Debian entry, which answers for an unknown one (exit
 * 127), so a tool added there needs only its link in lab/tools/bin.
 */
export function entryOf(tool: string, args: string[]): { entry: ToolEntry; argv: string[] } {
  if (tool !== "debian" && tool !== "image" && Object.hasOwn(TOOL_ENTRIES, tool))
    return { entry: tool as ToolEntry, argv: args };
  return { entry: IMAGE_TOOLS.has(tool) ? "image" : "debian", argv: [tool, ...args] };
}
