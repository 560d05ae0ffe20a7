import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";

/**
 * scripts/test-prerequisites.sh run for real (bash), against a folder standing in for the file
 * system (CLUPILOT_PREREQUISITES_ROOT) and a PATH of our own, so that programs can be missing
 * without uninstalling anything from this machine. "Not root" is real: as root, the script runs
 * as `nobody` through setpriv.
 */
const script = path.join(import.meta.dirname, "test-prerequisites.sh");
const asRoot = process.getuid?.() === 0;

/** The script's own table: every program it checks, as written there. */
function checkedPrograms(): string[] {
  const table = /\nprerequisites="\n([^"]*)"/.exec(fs.readFileSync(script, "utf8"))![1]!;
  return table
    .split("\n")
    .filter((line) => line.trim())
    .map((line) =>
      line
        .trim()
        .split(/\s+/)[0]!
        .replace("${CHROMIUM_PATH:-/usr/bin/chromium}", "/usr/bin/chromium"),
    );
}

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
});

/**
 * A machine with every checked program installed except `without`: absolute paths under a
 * fresh root folder, bare names in its bin folder (the PATH the script gets).
 */
function machine(without: string[] = []) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "clupilot-prerequisites-"));
  folders.push(root);
  fs.chmodSync(root, 0o755); // `nobody` must see into it
  const bin = path.join(root, "test-bin");
  fs.mkdirSync(path.join(root, "usr/sbin"), { recursive: true });
  fs.mkdirSync(bin);
  for (const program of checkedPrograms()) {
    if (without.includes(program)) continue;
    const file = program.startsWith("/") ? path.join(root, program) : path.join(bin, program);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, "#!/bin/sh\n", { mode: 0o755 });
  }
  // What the script itself runs when it installs (coreutils, on every Debian).
  for (const tool of ["chmod", "rm", "tail"]) {
    fs.symlinkSync(
      execFileSync("which", [tool], { encoding: "utf8" }).trim(),
      path.join(bin, tool),
    );
  }
  return { root, bin };
}

/** Runs the script with only the given environment, as `nobody` or as this (root) user. */
function runScript(
  env: Record<string, string>,
  as: "nobody" | "root",
): { code: number | null; stdout: string; stderr: string } {
  // The script comes on stdin: `nobody` may not be able to read a checkout below /root.
  const [command, args] =
    as === "nobody" && asRoot
      ? [
          "/usr/bin/setpriv",
          ["--reuid=nobody", "--regid=nogroup", "--clear-groups", "/bin/bash", "-s"],
        ]
      : ["/bin/bash", ["-s"]];
  const result = spawnSync(command, args, {
    input: fs.readFileSync(script),
    env: env as NodeJS.ProcessEnv, // only these: nothing of this process's environment
    cwd: os.tmpdir(),
    encoding: "utf8",
    // It must answer at once; a hang (or an attempt to install) ends here and fails below.
    timeout: 10_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * An apt-get that records each call — its arguments, DEBIAN_FRONTEND, and the policy-rc.d
 * in force — and "installs" a package by creating the programs `installs` lists for it.
 */
function withAptGet(root: string, bin: string, installs: Record<string, string[]>, fails = false) {
  const calls = path.join(root, "apt-get-calls");
  const cases = Object.entries(installs)
    .map(([pkg, files]) => {
      const quoted = files.map((file) => `'${root}${file}'`).join(" ");
      return `    ${pkg}) touch ${quoted}; chmod 755 ${quoted} ;;`;
    })
    .join("\n");
  fs.writeFileSync(
    path.join(bin, "apt-get"),
    `#!/bin/sh
PATH=/usr/bin:/bin
policy=$(tail -n 1 '${root}/usr/sbin/policy-rc.d' 2>/dev/null || echo none)
echo "$* | DEBIAN_FRONTEND=$DEBIAN_FRONTEND | policy-rc.d: $policy" >> '${calls}'
[ "$1" = install ] || exit 0
${fails ? 'echo "E: Unable to locate package snmpd" >&2; exit 100' : ""}
for pkg; do
  case "$pkg" in
${cases}
  esac
done
`,
    { mode: 0o755 },
  );
  return () => (fs.existsSync(calls) ? fs.readFileSync(calls, "utf8").trimEnd().split("\n") : []);
}

describe("npm test's prerequisites check (scripts/test-prerequisites.sh)", () => {
  it("passes shellcheck", () => {
    execFileSync("shellcheck", [script], { encoding: "utf8" });
  });

  it("prints nothing and succeeds when every program is installed", () => {
    const { root, bin } = machine();
    const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "nobody");
    expect(result).toEqual({ code: 0, stdout: "", stderr: "" });
  });

  it("not as root, stops at once with the exact apt-get line for what is missing", () => {
    const { root, bin } = machine(["/usr/sbin/sshd", "shellcheck", "/usr/lib/nut/dummy-ups"]);
    // A Debian machine: apt-get is there, but only root may install.
    const calls = withAptGet(root, bin, {});
    const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "nobody");
    expect(calls()).toEqual([]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      "npm test: not installed, and the tests run them: /usr/sbin/sshd shellcheck /usr/lib/nut/dummy-ups. On Debian, run:\n" +
        "  sudo apt-get install -y --no-install-recommends openssh-server shellcheck nut-server\n",
    );
  });

  it("names each package once, however many of its programs are missing", () => {
    const { root, bin } = machine(["/usr/sbin/upsd", "/usr/sbin/upsdrvctl", "/usr/sbin/upsmon"]);
    const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "nobody");
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "\n  sudo apt-get install -y --no-install-recommends nut-server nut-client\n",
    );
  });

  it("takes any kernel in /boot, executable or not, and names Debian's cloud kernel when there is none", () => {
    const withKernel = machine(["/boot/vmlinuz-*"]);
    fs.mkdirSync(path.join(withKernel.root, "boot"));
    fs.writeFileSync(path.join(withKernel.root, "boot/vmlinuz-6.1.0-57-amd64"), "", {
      mode: 0o644,
    });
    expect(
      runScript({ PATH: withKernel.bin, CLUPILOT_PREREQUISITES_ROOT: withKernel.root }, "nobody"),
    ).toEqual({ code: 0, stdout: "", stderr: "" });

    const without = machine(["/boot/vmlinuz-*"]);
    const result = runScript(
      { PATH: without.bin, CLUPILOT_PREREQUISITES_ROOT: without.root },
      "nobody",
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "the tests run them: /boot/vmlinuz-*. On Debian, run:\n  sudo apt-get install -y --no-install-recommends linux-image-cloud-amd64\n",
    );
  });

  it("refuses a CHROMIUM_PATH that is not a program, saying what to do", () => {
    const { root, bin } = machine();
    const result = runScript(
      { PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root, CHROMIUM_PATH: "/opt/no-chromium" },
      "nobody",
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/CHROMIUM_PATH=\/opt\/no-chromium is not a program: .*unset it/);
  });

  describe.runIf(asRoot)("as root on Debian (apt-get in PATH)", () => {
    it("installs the missing packages (update once, then install) and says so in one line", () => {
      const { root, bin } = machine(["/usr/sbin/sshd", "/usr/sbin/snmpd"]);
      const calls = withAptGet(root, bin, {
        "openssh-server": ["/usr/sbin/sshd"],
        snmpd: ["/usr/sbin/snmpd"],
      });
      const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "root");
      expect(result).toEqual({
        code: 0,
        stdout: "npm test: installing the Debian packages the tests need: openssh-server snmpd\n",
        stderr: "",
      });
      // The packages' services are held back while installing (policy-rc.d: 101 = forbidden).
      expect(calls()).toEqual([
        "update -qq | DEBIAN_FRONTEND=noninteractive | policy-rc.d: exit 101",
        "install -y -qq --no-install-recommends openssh-server snmpd | DEBIAN_FRONTEND=noninteractive | policy-rc.d: exit 101",
      ]);
      expect(fs.existsSync(path.join(root, "usr/sbin/policy-rc.d"))).toBe(false);
    });

    it("leaves a policy-rc.d that was already there as it was", () => {
      const { root, bin } = machine(["/usr/sbin/snmpd"]);
      fs.writeFileSync(path.join(root, "usr/sbin/policy-rc.d"), "#!/bin/sh\nexit 0\n", {
        mode: 0o755,
      });
      const calls = withAptGet(root, bin, { snmpd: ["/usr/sbin/snmpd"] });
      expect(runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "root").code).toBe(0);
      expect(calls()[1]).toContain("policy-rc.d: exit 0");
      expect(fs.readFileSync(path.join(root, "usr/sbin/policy-rc.d"), "utf8")).toBe(
        "#!/bin/sh\nexit 0\n",
      );
    });

    it("when apt-get fails, shows its error and the line to run, and exits non-zero", () => {
      const { root, bin } = machine(["/usr/sbin/snmpd"]);
      withAptGet(root, bin, { snmpd: ["/usr/sbin/snmpd"] }, true);
      const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "root");
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        "E: Unable to locate package snmpd\n" +
          "npm test: installing failed (see above). Fix that, then run: apt-get install -y --no-install-recommends snmpd\n",
      );
      expect(fs.existsSync(path.join(root, "usr/sbin/policy-rc.d"))).toBe(false);
    });

    it("when a program is still missing after installing, says which and exits non-zero", () => {
      const { root, bin } = machine(["/usr/sbin/upsd", "/usr/lib/nut/dummy-ups"]);
      withAptGet(root, bin, { "nut-server": ["/usr/sbin/upsd"] });
      const result = runScript({ PATH: bin, CLUPILOT_PREREQUISITES_ROOT: root }, "root");
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        "npm test: still missing after installing nut-server: /usr/lib/nut/dummy-ups\n",
      );
    });
  });
});
