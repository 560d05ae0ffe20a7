import fs from "node:fs";

import { catalogPackage } from "../../debian/catalog";
import { isInstalled } from "../../debian/dpkg-status";
import { readDebianFaults, scaled, sleep, TOOL_ROOT } from "../../debian/lab-state";
import {
  dpkgStatusText,
  LabImageError,
  listDir,
  PACKAGE_FILES,
  parseDpkgStatus,
  readLabImage,
  writeLabImageHeader,
  type LabImage,
} from "../format";

/**
 * Simulated libguestfs tools (`virt-customize`, `virt-ls`, `virt-cat`, `virt-filesystems`,
 * `guestfish`) and `qemu-img` over the lab image format (lab/image/format.ts). Image paths are
 * the node's, as given (relative to the command's cwd): the tool server resolves them in the
 * node's view, so `/var/lib/clupilot/images/…` is the file the console's scripts downloaded.
 */

const out = (s: string) => process.stdout.write(s);
const err = (s: string) => process.stderr.write(s);

const PROVIDED_BY: Record<string, string[]> = {
  "virt-customize": ["libguestfs-tools"],
  "virt-ls": ["libguestfs-tools"],
  "virt-cat": ["libguestfs-tools"],
  "virt-filesystems": ["libguestfs-tools"],
  guestfish: ["libguestfs-tools"],
  "qemu-img": ["qemu-utils", "pve-qemu-kvm"],
};

function openImage(tool: string, file: string | undefined, root: string): LabImage | null {
  if (!file) {
    err(
      `${tool}: error: you must specify at least one -a or -d option.\nRun '${tool} --help' to see a full list of available command line options.\n`,
    );
    return null;
  }
  void root;
  try {
    return readLabImage(file);
  } catch (error) {
    if (error instanceof LabImageError) {
      if (error.kind === "missing") err(`${tool}: error: libguestfs error: ${error.message}\n`);
      else
        err(
          `${tool}: error: libguestfs error: could not open disk image ${file}: qemu-img: ${error.message}\n\nIf reporting bugs, run ${tool} with debugging enabled and include the complete output:\n\n  ${tool} -v -x [...]\n`,
        );
      return null;
    }
    throw error;
  }
}

function stamp(startedAt: number): string {
  const s = (Date.now() - startedAt) / 1000;
  return `[${s.toFixed(1).padStart(6)}]`;
}

async function virtCustomize(root: string, argv: string[]): Promise<number> {
  let image: string | undefined;
  const ops: { op: string; arg: string }[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) {
        err(`virt-customize: option '${arg}' needs an argument.\n`);
        process.exit(1);
      }
      return v;
    };
    switch (arg) {
      case "-a":
      case "--add":
        image = value();
        break;
      case "--install":
      case "--run-command":
      case "--truncate":
      case "--delete":
      case "--write":
      case "--mkdir":
      case "--hostname":
      case "--root-password":
      case "--firstboot-command":
      case "--uninstall":
        ops.push({ op: arg.slice(2), arg: value() });
        break;
      case "-q":
      case "--quiet":
      case "-v":
      case "-x":
      case "--no-network":
      case "--network":
        break;
      case "--format":
      case "--smp":
      case "-m":
      case "--memsize":
        value();
        break;
      default:
        err(
          `virt-customize: unknown option '${arg}'\nRun 'virt-customize --help' to see a full list of available command line options.\n`,
        );
        return 1;
    }
  }
  const started = Date.now();
  const disk = openImage("virt-customize", image, root);
  if (disk === null) return 1;
  const faults = readDebianFaults(root);
  out(`${stamp(started)} Examining the guest ...\n`);
  await sleep(scaled(root, 8000));
  out(`${stamp(started)} Setting a random seed\n`);
  const installed = new Map(
    parseDpkgStatus(disk.files["/var/lib/dpkg/status"] ?? "").map((p) => [p.name, p]),
  );
  for (const { op, arg } of ops) {
    disk.customizations.push(`${op} ${arg}`);
    switch (op) {
      case "install": {
        const names = arg
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean);
        out(`${stamp(started)} Installing packages: ${names.join(" ")}\n`);
        for (const name of names) {
          const pkg = catalogPackage(name);
          if (!pkg || !pkg.repos.includes("debian")) {
            err(
              `virt-customize: error: \n\nE: Unable to locate package ${name}\n\nIf reporting bugs, run virt-customize with debugging enabled and include the complete output:\n\n  virt-customize -v -x [...]\n`,
            );
            return 1;
          }
        }
        await sleep(scaled(root, 15_000 + 4000 * names.length));
        if (faults.virtCustomizeSkipsInstall) break;
        for (const name of names) {
          const pkg = catalogPackage(name)!;
          installed.set(name, {
            name,
            version: pkg.version,
            architecture: pkg.architecture ?? "amd64",
          });
          for (const file of PACKAGE_FILES[name] ?? []) disk.files[file] = `ELF (${name})\n`;
        }
        disk.files["/var/lib/dpkg/status"] = dpkgStatusText([...installed.values()]);
        break;
      }
      case "uninstall":
        out(`${stamp(started)} Uninstalling packages: ${arg.split(",").join(" ")}\n`);
        for (const name of arg.split(",")) installed.delete(name.trim());
        disk.files["/var/lib/dpkg/status"] = dpkgStatusText([...installed.values()]);
        break;
      case "run-command":
        out(`${stamp(started)} Running: ${arg}\n`);
        await sleep(scaled(root, 2000));
        break;
      case "truncate":
        out(`${stamp(started)} Truncating: ${arg}\n`);
        disk.files[arg] = "";
        break;
      case "delete":
        out(`${stamp(started)} Deleting: ${arg}\n`);
        for (const p of Object.keys(disk.files))
          if (p === arg || p.startsWith(`${arg}/`)) delete disk.files[p];
        disk.dirs = disk.dirs.filter((d) => d !== arg && !d.startsWith(`${arg}/`));
        break;
      case "write": {
        const colon = arg.indexOf(":");
        out(`${stamp(started)} Writing: ${arg.slice(0, colon)}\n`);
        disk.files[arg.slice(0, colon)] = arg.slice(colon + 1);
        break;
      }
      case "mkdir":
        out(`${stamp(started)} Making directory: ${arg}\n`);
        disk.dirs.push(arg);
        break;
      case "hostname":
        out(`${stamp(started)} Setting the hostname: ${arg}\n`);
        disk.files["/etc/hostname"] = `${arg}\n`;
        break;
      case "root-password":
        out(`${stamp(started)} Setting passwords\n`);
        break;
      case "firstboot-command":
        out(`${stamp(started)} Installing firstboot command: ${arg}\n`);
        break;
    }
  }
  out(`${stamp(started)} Finishing off\n`);
  writeLabImageHeader(image!, disk);
  return 0;
}

function fileOf(tool: string, disk: LabImage, p: string): string | null {
  const content = disk.files[p];
  if (content === undefined) {
    const isDir = listDir(disk, p) !== null;
    err(
      isDir
        ? `libguestfs: error: download: ${p}: Is a directory\n`
        : `libguestfs: error: download: ${p}: No such file or directory\n`,
    );
    void tool;
    return null;
  }
  return content;
}

function parseAdd(argv: string[]): { image: string | undefined; rest: string[] } {
  let image: string | undefined;
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "-a" || a === "--add") image = argv[++i];
    else if (a.startsWith("--add=")) image = a.slice(6);
    else if (a === "--format" || a === "-d" || a === "--domain") i++;
    else rest.push(a);
  }
  return { image, rest };
}

function virtLs(root: string, argv: string[]): number {
  const { image, rest } = parseAdd(argv);
  const disk = openImage("virt-ls", image, root);
  if (disk === null) return 1;
  const dirs = rest.filter((a) => !a.startsWith("-"));
  if (dirs.length === 0) {
    err("virt-ls: error: you must specify at least one directory path.\n");
    return 1;
  }
  for (const dir of dirs) {
    const names = listDir(disk, dir);
    if (names === null) {
      err(`libguestfs: error: ls0: ${dir}: No such file or directory\n`);
      return 1;
    }
    for (const n of names) out(`${n}\n`);
  }
  return 0;
}

function virtCat(root: string, argv: string[]): number {
  const { image, rest } = parseAdd(argv);
  const disk = openImage("virt-cat", image, root);
  if (disk === null) return 1;
  for (const p of rest.filter((a) => !a.startsWith("-"))) {
    const content = fileOf("virt-cat", disk, p);
    if (content === null) return 1;
    out(content);
  }
  return 0;
}

function human(bytes: number): string {
  const units = ["K", "M", "G", "T"];
  let v = bytes;
  let unit = "";
  for (const u of units) {
    if (v < 1024) break;
    v /= 1024;
    unit = u;
  }
  if (unit === "") return String(bytes);
  return v >= 10 ? `${Math.round(v)}${unit}` : `${v.toFixed(1)}${unit}`;
}

function virtFilesystems(root: string, argv: string[]): number {
  const { image, rest } = parseAdd(argv);
  const disk = openImage("virt-filesystems", image, root);
  if (disk === null) return 1;
  const all = rest.includes("--all");
  const long = rest.includes("--long") || rest.includes("-l");
  const h = rest.includes("-h") || rest.includes("--human-readable");
  const showParts = all || rest.includes("--partitions");
  const showDevices = all || rest.includes("--block-devices");
  const showFs =
    all ||
    rest.includes("--filesystems") ||
    (!rest.includes("--partitions") && !rest.includes("--block-devices"));
  const size = (n: number) => (h ? human(n) : String(n));
  const rows: string[][] = [];
  const parts = [...disk.partitions].sort((a, b) => a.number - b.number);
  if (showFs)
    for (const p of parts) {
      if (p.filesystem === null && !all) continue;
      rows.push([
        `/dev/sda${p.number}`,
        "filesystem",
        p.filesystem ?? "unknown",
        p.label ?? "-",
        "-",
        size(p.filesystemSize ?? p.size),
        "-",
      ]);
    }
  if (showParts)
    for (const p of parts)
      rows.push([`/dev/sda${p.number}`, "partition", "-", "-", "-", size(p.size), "/dev/sda"]);
  if (showDevices) rows.push(["/dev/sda", "device", "-", "-", "-", size(disk.virtualSize), "-"]);
  if (!long) {
    for (const r of rows) out(`${r[0]}\n`);
    return 0;
  }
  const header = ["Name", "Type", "VFS", "Label", "MBR", "Size", "Parent"];
  const table = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
  for (const r of table)
    out(`${r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ")}\n`);
  return 0;
}

function guestfish(root: string, argv: string[]): Promise<number> {
  const { image, rest } = parseAdd(argv);
  const words = rest.filter(
    (a) => !["--ro", "-r", "-i", "--inspector", "--rw", "-w", "-x", "-v"].includes(a),
  );
  const run = (commands: string[][]): number => {
    const disk = openImage("guestfish", image, root);
    if (disk === null) return 1;
    for (const [cmd, ...args] of commands) {
      switch (cmd) {
        case undefined:
          break;
        case "cat": {
          const c = fileOf("guestfish", disk, args[0] ?? "");
          if (c === null) return 1;
          out(c);
          break;
        }
        case "ls": {
          const names = listDir(disk, args[0] ?? "/");
          if (names === null) {
            err(`libguestfs: error: ls: ${args[0] ?? ""}: No such file or directory\n`);
            return 1;
          }
          for (const n of names) out(`${n}\n`);
          break;
        }
        case "exists":
          out(`${args[0]! in disk.files || listDir(disk, args[0]!) !== null}\n`);
          break;
        case "is-file":
          out(`${args[0]! in disk.files}\n`);
          break;
        case "is-dir":
          out(`${!(args[0]! in disk.files) && listDir(disk, args[0]!) !== null}\n`);
          break;
        case "list-filesystems":
          for (const p of [...disk.partitions].sort((a, b) => a.number - b.number))
            out(`/dev/sda${p.number}: ${p.filesystem ?? "unknown"}\n`);
          break;
        case "list-partitions":
          for (const p of [...disk.partitions].sort((a, b) => a.number - b.number))
            out(`/dev/sda${p.number}\n`);
          break;
        case "part-get-parttype":
          out(`${disk.partitionTable}\n`);
          break;
        case "inspect-os":
          out("/dev/sda1\n");
          break;
        case "inspect-get-distro":
          out("debian\n");
          break;
        case "inspect-get-major-version":
          out("13\n");
          break;
        default:
          err(`guestfish: unknown command '${cmd}'\n`);
          return 1;
      }
    }
    return 0;
  };
  if (words.length > 0) {
    const commands: string[][] = [[]];
    for (const w of words) {
      if (w === ":") commands.push([]);
      else commands[commands.length - 1]!.push(w);
    }
    return Promise.resolve(run(commands));
  }
  return new Promise((resolve) => {
    let text = "";
    process.stdin.setEncoding("utf8");
    process.stdin.on("data", (c: string) => (text += c));
    process.stdin.on("end", () =>
      resolve(
        run(
          text
            .split("\n")
            .map((l) => l.replace(/#.*$/, "").trim())
            .filter(Boolean)
            .map((l) => l.split(/\s+/)),
        ),
      ),
    );
  });
}

function qemuImg(root: string, argv: string[]): number {
  const [verb, ...rest] = argv;
  const files = rest.filter(
    (a, i) => !a.startsWith("-") && !["-f", "-O", "-o"].includes(rest[i - 1] ?? ""),
  );
  const opt = (name: string) => rest[rest.indexOf(name) + 1];
  const open = (file: string | undefined): LabImage | null => {
    try {
      return readLabImage(file ?? "");
    } catch (error) {
      if (!(error instanceof LabImageError)) throw error;
      err(
        error.kind === "missing"
          ? `qemu-img: Could not open '${file ?? ""}': Could not open '${file ?? ""}': No such file or directory\n`
          : `qemu-img: Could not open '${file ?? ""}': ${error.message.replace(`${file ?? ""}: `, "")}\n`,
      );
      return null;
    }
  };
  void root;
  switch (verb) {
    case "info": {
      const file = files[0];
      const disk = open(file);
      if (disk === null) return 1;
      const json =
        rest.includes("--output=json") || (rest.includes("--output") && opt("--output") === "json");
      if (json) {
        out(
          `${JSON.stringify(
            {
              "virtual-size": disk.virtualSize,
              filename: file,
              ...(disk.format === "qcow2" ? { "cluster-size": 65536 } : {}),
              format: disk.format,
              "actual-size": disk.fileSize,
              ...(disk.format === "qcow2"
                ? {
                    "format-specific": {
                      type: "qcow2",
                      data: {
                        compat: "1.1",
                        "compression-type": "zlib",
                        "lazy-refcounts": false,
                        "refcount-bits": 16,
                        corrupt: false,
                        "extended-l2": false,
                      },
                    },
                  }
                : {}),
              "dirty-flag": false,
            },
            null,
            4,
          )}\n`,
        );
      } else {
        out(
          `image: ${file}\nfile format: ${disk.format}\nvirtual size: ${human(disk.virtualSize).replace(/([KMGT])$/, " $1iB")} (${disk.virtualSize} bytes)\ndisk size: ${human(disk.fileSize).replace(/([KMGT])$/, " $1iB")}\n` +
            (disk.format === "qcow2"
              ? "cluster_size: 65536\nFormat specific information:\n    compat: 1.1\n    compression type: zlib\n    lazy refcounts: false\n    refcount bits: 16\n    corrupt: false\n    extended l2: false\n"
              : ""),
        );
      }
      return 0;
    }
    case "convert": {
      const [src, dst] = files;
      const disk = open(src);
      if (disk === null) return 1;
      if (!dst) {
        err("qemu-img: Expecting one image file name\n");
        return 1;
      }
      const format = (opt("-O") ?? "raw") as LabImage["format"];
      // Same bytes; the header says the new format (a raw file would be as large as the disk).
      fs.copyFileSync(src!, dst);
      writeLabImageHeader(dst, { ...disk, format });
      return 0;
    }
    case "check": {
      const disk = open(files[0]);
      if (disk === null) return 1;
      out("No errors were found on the image.\n");
      return 0;
    }
    default:
      err(`qemu-img: Command not found: ${verb ?? ""}\n`);
      return 1;
  }
}

async function main(): Promise<number> {
  const [tool, ...argv] = process.argv.slice(2);
  if (!tool) return 2;
  const root = TOOL_ROOT;
  const providers = PROVIDED_BY[tool] ?? [];
  if (providers.length > 0 && !providers.some((p) => isInstalled(root, p))) {
    err(`bash: line 1: ${tool}: command not found\n`);
    return 127;
  }
  switch (tool) {
    case "virt-customize":
      return virtCustomize(root, argv);
    case "virt-ls":
      return virtLs(root, argv);
    case "virt-cat":
      return virtCat(root, argv);
    case "virt-filesystems":
      return virtFilesystems(root, argv);
    case "guestfish":
      return guestfish(root, argv);
    case "qemu-img":
      return qemuImg(root, argv);
    default:
      err(`lab: unknown tool ${tool}\n`);
      return 127;
  }
}

// A closed pipe (`dpkg -l | head`) ends the tool quietly, as SIGPIPE does a C program.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(141);
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    err(
      `lab tool crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 70;
  },
);
