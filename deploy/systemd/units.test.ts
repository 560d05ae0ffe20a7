import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The production units (docs/production.md). What a unit file can get wrong without
 * systemd noticing at install time is checked here from the files: what they run, as whom, with
 * which data folder and sandbox. Where systemd-analyze is installed (Debian has it with
 * systemd) systemd itself parses the units, drop-in included.
 */

const here = import.meta.dirname;
const repoRoot = path.resolve(here, "../..");
const INSTALL_DIR = "/opt/clupilot";
const DROP_IN = "clupilot-.service.d/hardening.conf";
const SERVICES = ["clupilot-web.service", "clupilot-worker@.service"] as const;

type Unit = Map<string, Map<string, string[]>>;

/**
 * systemd's syntax as these files use it: `[Section]`, `Key=value`, `#`/`;` comments; a key
 * given twice collects both values, an empty value resets the list (as systemd does for lists).
 */
function parseUnit(text: string, into: Unit = new Map()): Unit {
  let section: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = into.get(header[1]!) ?? new Map();
      into.set(header[1]!, section);
      continue;
    }
    const assignment = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (!assignment || !section) throw new Error(`not a unit line: ${line}`);
    const [, key, value] = assignment as unknown as [string, string, string];
    section.set(key, value === "" ? [""] : [...(section.get(key) ?? []).filter(Boolean), value]);
  }
  return into;
}

function read(file: string): string {
  return fs.readFileSync(path.join(here, file), "utf8");
}

/** The unit as systemd assembles it: the file, then the drop-in of every `clupilot-*` unit. */
function assembled(service: string): Unit {
  return parseUnit(read(DROP_IN), parseUnit(read(service)));
}

function values(unit: Unit, section: string, key: string): string[] {
  return unit.get(section)?.get(key) ?? [];
}

function value(unit: Unit, section: string, key: string): string | undefined {
  return values(unit, section, key).at(-1);
}

/** `KEY=value` lines of the environment file example. */
function envExample(): Map<string, string> {
  return new Map(
    read("clupilot.env.example")
      .split("\n")
      .filter((line) => /^[A-Z_]+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]),
  );
}

describe("deploy/systemd units", () => {
  it.each(SERVICES)(
    "%s runs scripts of this repository with node from the install folder",
    (service) => {
      const unit = assembled(service);
      expect(value(unit, "Service", "WorkingDirectory")).toBe(INSTALL_DIR);
      const commands = [
        ...values(unit, "Service", "ExecStartPre"),
        ...values(unit, "Service", "ExecStart"),
      ];
      expect(commands.at(-1)).toBe(
        service === "clupilot-web.service"
          ? "node --import tsx scripts/web-server.ts"
          : "node --import tsx worker/main.ts",
      );
      // Migrations first, the same script `npm run db:migrate` runs.
      expect(commands[0]).toBe("node --import tsx scripts/migrate.ts");
      const scripts = JSON.parse(fs.readFileSync(path.join(repoRoot, "package.json"), "utf8"))
        .scripts as Record<string, string>;
      expect(scripts["db:migrate"]).toBe("node --import tsx scripts/migrate.ts");
      for (const command of commands) {
        const script = /^node --import tsx (\S+)$/.exec(command)?.[1];
        expect(script, command).toBeDefined();
        expect(fs.existsSync(path.join(repoRoot, script!)), `${script} in the repository`).toBe(
          true,
        );
      }
    },
  );

  it.each(SERVICES)(
    "%s runs as the clupilot user with the shared environment file and data folder",
    (service) => {
      const unit = assembled(service);
      expect(value(unit, "Service", "User")).toBe("clupilot");
      expect(value(unit, "Service", "Group")).toBe("clupilot");
      expect(value(unit, "Service", "DynamicUser")).toBeUndefined();
      expect(value(unit, "Service", "EnvironmentFile")).toBe("/etc/clupilot/clupilot.env");
      expect(value(unit, "Service", "StateDirectory")).toBe("clupilot");
      expect(value(unit, "Service", "StateDirectoryMode")).toBe("0700");
      // The environment file points the console at the folder systemd creates and unlocks.
      expect(envExample().get("CLUPILOT_DATA_DIR")).toBe("/var/lib/clupilot");
      expect(values(unit, "Service", "ReadWritePaths")).toEqual(["/var/lib/clupilot"]);
    },
  );

  it.each(SERVICES)("%s is restarted after any exit, without ever giving up", (service) => {
    const unit = assembled(service);
    expect(value(unit, "Service", "Restart")).toBe("always");
    expect(value(unit, "Service", "RestartSec")).toMatch(/^\d+s$/);
    expect(value(unit, "Unit", "StartLimitIntervalSec")).toBe("0");
    expect(value(unit, "Install", "WantedBy")).toBe("multi-user.target");
  });

  it.each(SERVICES)(
    "%s gets the sandbox, and never MemoryDenyWriteExecute (Node's JIT)",
    (service) => {
      const unit = assembled(service);
      const expected: Record<string, string> = {
        NoNewPrivileges: "yes",
        ProtectSystem: "strict",
        ProtectHome: "yes",
        PrivateTmp: "yes",
        PrivateDevices: "yes",
        ProtectKernelTunables: "yes",
        ProtectKernelModules: "yes",
        ProtectControlGroups: "yes",
        RestrictSUIDSGID: "yes",
        LockPersonality: "yes",
        RestrictNamespaces: "yes",
        UMask: "0077",
        CapabilityBoundingSet: "",
        AmbientCapabilities: "",
      };
      for (const [key, wanted] of Object.entries(expected)) {
        expect(value(unit, "Service", key), key).toBe(wanted);
      }
      expect(values(unit, "Service", "SystemCallFilter")).toContain("@system-service");
      expect(value(unit, "Service", "MemoryDenyWriteExecute")).toBeUndefined();
    },
  );

  it("name no path outside the install, configuration and data folders, and the install paths exist in the repository", () => {
    const allowed = [INSTALL_DIR, "/etc/clupilot", "/var/lib/clupilot", "/tmp"];
    const files = [...SERVICES, DROP_IN, "clupilot.env.example"];
    const outside: string[] = [];
    for (const file of files) {
      // URLs are not paths of this machine; a file: URL is, by its path.
      const text = read(file)
        .replaceAll("file://", "")
        .replace(/[a-z]+:\/\/\S+/g, "");
      for (const [found] of text.matchAll(/(?<![\w.~}$:-])\/[\w.@-]+(?:\/[\w.@*-]+)*/g)) {
        if (!allowed.some((folder) => found === folder || found.startsWith(`${folder}/`))) {
          outside.push(`${file}: ${found}`);
        }
        if (found.startsWith(`${INSTALL_DIR}/`)) {
          const inRepo = path.join(repoRoot, found.slice(INSTALL_DIR.length + 1));
          if (!fs.existsSync(inRepo)) outside.push(`${file}: ${found} (not in the repository)`);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it("the environment file example sets only variables the console reads", () => {
    const sources = ["lib", "scripts", "worker"].flatMap((dir) =>
      fs
        .readdirSync(path.join(repoRoot, dir), { recursive: true, encoding: "utf8" })
        .filter((file) => file.endsWith(".ts") && !file.endsWith(".test.ts"))
        .map((file) => fs.readFileSync(path.join(repoRoot, dir, file), "utf8")),
    );
    const unread = [...envExample().keys()].filter(
      (key) => !sources.some((source) => source.includes(`env.${key}`)),
    );
    expect(unread).toEqual([]);
    expect([...envExample().keys()]).toEqual(
      expect.arrayContaining(["DATABASE_URL", "CLUPILOT_SECRET_KEY"]),
    );
  });
});

const systemdAnalyze = spawnSync("systemd-analyze", ["--version"]).status === 0;

/**
 * The units and the drop-in in a folder of their own, as /etc/systemd/system holds them. `node`
 * is resolved on systemd's search path of the machine that verifies, so the test machine's node
 * stands in for it: the tests must pass wherever Node is installed.
 */
function installedCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-units-"));
  fs.mkdirSync(path.join(dir, path.dirname(DROP_IN)));
  fs.copyFileSync(path.join(here, DROP_IN), path.join(dir, DROP_IN));
  for (const service of SERVICES) {
    const text = read(service).replace(/^(Exec\w*=)node /gm, `$1${process.execPath} `);
    fs.writeFileSync(path.join(dir, service), text);
  }
  return dir;
}

function analyze(args: string[]) {
  const result = spawnSync("systemd-analyze", args, { encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}

describe.skipIf(!systemdAnalyze)("deploy/systemd units, read by systemd-analyze", () => {
  // The template as the instances an operator starts: @1 stands for any.
  const instances = ["clupilot-web.service", "clupilot-worker@1.service"];

  it("verify accepts both units and the drop-in without a single warning", () => {
    const dir = installedCopy();
    try {
      const result = analyze(["verify", "--man=no", ...instances.map((u) => path.join(dir, u))]);
      expect(result).toEqual({ status: 0, output: "" });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each(instances)("security sees the sandbox in %s and rates it OK", (instance) => {
    const dir = installedCopy();
    try {
      const file = path.join(dir, instance);
      const report = analyze(["security", "--offline=true", "--json=short", file]);
      expect(report.status, report.output).toBe(0);
      const json = report.output.slice(report.output.indexOf("["));
      const checks = new Map(
        (JSON.parse(json) as { name: string; set: boolean }[]).map((c) => [c.name, c.set]),
      );
      const required = [
        "User=/DynamicUser=",
        "NoNewPrivileges=",
        "ProtectSystem=",
        "ProtectHome=",
        "PrivateTmp=",
        "PrivateDevices=",
        "ProtectKernelTunables=",
        "ProtectKernelModules=",
        "ProtectControlGroups=",
        "RestrictSUIDSGID=",
        "LockPersonality=",
        "RestrictNamespaces=~user",
        "CapabilityBoundingSet=~CAP_SYS_ADMIN",
        "SystemCallFilter=~@mount",
        "UMask=",
      ];
      expect(required.filter((name) => checks.get(name) !== true)).toEqual([]);
      expect(checks.get("MemoryDenyWriteExecute=")).toBe(false);
      // Exposure 1.4 of 10 on systemd 252 (the threshold counts in tenths); without the drop-in
      // it would be 9.2, "UNSAFE".
      const rated = analyze(["security", "--offline=true", "--threshold=20", file]);
      expect(rated.status, rated.output).toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
