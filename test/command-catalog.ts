import { OS_PROBE } from "@/lib/steps/onboarding/check-operating-system";
import { PRIVILEGE_PROBE } from "@/lib/steps/onboarding/connect-host";
import { asRoot } from "@/lib/steps/remote-job/remote-host";
import {
  buildEnvFile,
  CLEAR_STATUS,
  installUploadCommand,
  killBuildCommand,
  READ_STATUS,
  RESOLVE_BUILD_DIR,
  startBuildCommand,
  watchBuildCommand,
  BUILD_SIGNATURE,
} from "@/lib/steps/onboarding/build-vm-template/commands";
import {
  ACCESS_PROBE,
  accessCommand,
  type AccessAction,
} from "@/lib/steps/onboarding/create-api-token";
import {
  HOSTNAME_PROBE,
  VERIFY_COMMAND,
  writeHostsCommand,
} from "@/lib/steps/onboarding/prepare-hostname";
import {
  aptUpdateCommand,
  aptUpdateJobBody,
  fetchKeyringCommand,
  removeSourceCommand,
  repositoryProbe,
  writeSourceCommand,
} from "@/lib/steps/onboarding/install-proxmox-repository";
import {
  JOB_WRAPPER,
  clearJobCommand,
  killJobCommand,
  readJobCommand,
  startJobCommand,
  watchJobCommand,
} from "@/lib/steps/remote-job/remote-job";
import {
  kernelJobBody,
  KERNEL_PROBE,
  packageStatesCommand,
} from "@/lib/steps/onboarding/install-proxmox-kernel";
import { PVE_PROBE, planPveJob } from "@/lib/steps/onboarding/install-proxmox-ve";
import { REBOOT_COMMAND, REBOOT_PROBE } from "@/lib/steps/onboarding/reboot-into-pve-kernel";
import {
  APPLY_NETWORK,
  CANCEL_ROLLBACK,
  CLEAR_APPLY_RESULT,
  NETWORK_PROBE,
  RESTORE_NETWORK,
  prepareNetworkCommand,
} from "@/lib/steps/onboarding/configure-proxmox";
import { ENSURE_IMAGE_STORAGE } from "@/lib/steps/onboarding/image-storage";
import {
  appendKeyCommand,
  hasKeyCommand,
  installKeyCommand,
  removeKeyCommand,
} from "@/lib/console-key/commands";
import {
  tokenListCommand,
  tokenRemoveCommand,
  userListCommand,
} from "@/lib/steps/onboarding/decommission/remove-api-token";
import { tailCommand } from "@/lib/logs/tail-remote-file";
import { killGroupCommand, uploadCommand, withGroupMarker } from "@/lib/ssh/commands";
import { sh } from "@/lib/ssh/quote";

/**
 * Every shell command the console can send to a host, with samples built from hostile values.
 * `lib/ssh/commands.test.ts` runs each sample through `sh -n`: every command a step sends must
 * parse. A step that builds commands adds an entry here, pointing at its own exported builder.
 * Imported by tests only, so it may depend on any step module.
 */
export type CommandCatalogEntry = {
  /** `<module>/<builder>`, e.g. `ssh/uploadCommand`. */
  name: string;
  /** Commands built from sample inputs; include the hostile values below where inputs vary. */
  samples: () => string[];
};

/** Values that break naive quoting: spaces, quotes, substitutions, newlines, globs, dashes. */
export const HOSTILE_VALUES: readonly string[] = [
  "",
  "plain",
  "a b",
  "  leading and trailing  ",
  "'",
  "''",
  "it's",
  '"',
  "\"double\" and 'single'",
  "$(rm -rf /)",
  "`rm -rf /`",
  "${HOME}",
  "$HOME",
  "$((1+1))",
  "a\nb",
  "line1\nline2\n",
  "\n",
  "tab\there",
  "\r\n",
  "back\\slash",
  "\\",
  "*",
  "?[a-z]*",
  "~",
  "~root",
  "-rf",
  "--",
  "-",
  "a;b",
  "a&&b",
  "a||b",
  "a|b",
  "a>b",
  "a<b",
  "(sub)",
  "{a,b}",
  "!",
  "!!",
  "#comment",
  "%s%n",
  "ünïcødé ✓ 日本",
  "emoji 🚀",
  "\u0001\u0007\u001b[31m",
  "x".repeat(5000),
];

/** Hostile upload targets (relative to the current directory, so tests can create them). */
export const HOSTILE_PATHS: readonly string[] = [
  "a b",
  "$(rm -rf /)",
  "'",
  "it's here/file",
  "new\nline",
  "`touch pwned`",
  "-dash",
  "dir with space/sub dir/file.sh",
  "ünïcødé/日本.txt",
  "glob*/?[x]",
];

const SHA = "0".repeat(64);

export const commandCatalog: readonly CommandCatalogEntry[] = [
  {
    name: "ssh/uploadCommand",
    samples: () =>
      HOSTILE_PATHS.flatMap((remotePath) => [
        uploadCommand({
          remotePath,
          tmpPath: `${remotePath}.clupilot-tmp-abc`,
          mode: 0o644,
          sha256: SHA,
        }),
        uploadCommand({
          remotePath: `/var/lib/clupilot/${remotePath}`,
          tmpPath: `/var/lib/clupilot/${remotePath}.clupilot-tmp-abc`,
          mode: 0o755,
          sha256: SHA,
        }),
      ]),
  },
  {
    name: "steps/onboarding/ConnectHost",
    samples: () => [PRIVILEGE_PROBE, asRoot("admin", PRIVILEGE_PROBE)],
  },
  {
    name: "steps/onboarding/CheckOperatingSystem",
    samples: () => [OS_PROBE, asRoot("admin", OS_PROBE)],
  },
  {
    name: "steps/remote-job/asRoot",
    samples: () =>
      HOSTILE_VALUES.flatMap((value) => [
        asRoot("root", sh`echo ${value}`),
        asRoot("admin", sh`printf %s ${value}`),
      ]),
  },
  {
    name: "steps/onboarding/BuildVmTemplate",
    samples: () => [
      RESOLVE_BUILD_DIR,
      READ_STATUS,
      CLEAR_STATUS,
      killBuildCommand(),
      killBuildCommand(0),
      `${startBuildCommand("/var/lib/clupilot/template-build")}\n${BUILD_SIGNATURE}`,
      watchBuildCommand("2781591655 50", 30),
      watchBuildCommand("2781591655 50", 0.2),
      ...HOSTILE_VALUES.map((value) => asRoot("admin", watchBuildCommand(value, 30))),
      // The waiter that shows the phase and streams build.log: a phase and a log path as odd as
      // a host may give them, a first read and a resumed one.
      ...HOSTILE_VALUES.map((value) =>
        asRoot("admin", watchBuildCommand("2781591655 50", 30, { phase: value })),
      ),
      ...HOSTILE_PATHS.flatMap((dir) => [
        watchBuildCommand("2781591655 50", 30, {
          phase: "",
          log: { path: `/var/lib/clupilot/${dir}/build.log`, offset: 0, identity: null },
        }),
        asRoot(
          "admin",
          watchBuildCommand("2781591655 50", 30, {
            phase: "customise image",
            log: {
              path: `/var/lib/clupilot/${dir}/build.log`,
              offset: 4096,
              identity: "131074|1234567 256",
            },
          }),
        ),
      ]),
      ...HOSTILE_PATHS.map((dir) => startBuildCommand(`/var/lib/clupilot/${dir}`)),
      // The build.log tail, root-wrapped as the step sends it (first read, then a resumed one).
      ...HOSTILE_PATHS.flatMap((dir) => [
        tailCommand(`/var/lib/clupilot/${dir}/build.log`, { offset: 0, inode: null }),
        asRoot(
          "admin",
          tailCommand(`/var/lib/clupilot/${dir}/build.log`, {
            offset: 4096,
            inode: "1234|4294967295 256",
          }),
        ),
      ]),
      ...HOSTILE_PATHS.map((dir) =>
        installUploadCommand(`/tmp/clupilot-upload-1-${dir}`, `/var/lib/clupilot/${dir}/x.sh`),
      ),
      ...HOSTILE_VALUES.map((value) =>
        buildEnvFile({
          vmids: [9000, 9001],
          imageUrl: `https://example.test/${value}`,
          sha512sumsUrl: value,
        }),
      ),
    ],
  },
  {
    name: "steps/onboarding/CreateApiToken",
    samples: () => {
      const actions: AccessAction[] = [
        { kind: "createUser" },
        { kind: "createRole" },
        { kind: "fixRole", had: ["VM.Audit"] },
        { kind: "grantUser" },
        { kind: "createToken" },
        { kind: "rotateToken", why: "lost secret" },
        { kind: "adoptToken", why: "lost secret; shared by the cluster" },
        { kind: "grantToken" },
      ];
      const commands = [ACCESS_PROBE, ...actions.map(accessCommand)];
      return [...commands, ...commands.map((command) => asRoot("admin", command))];
    },
  },
  {
    name: "steps/remote-job",
    samples: () => [
      JOB_WRAPPER,
      startJobCommand("install-proxmox-kernel"),
      readJobCommand("install-proxmox-ve"),
      killJobCommand("install-proxmox-kernel"),
      killJobCommand("install-proxmox-kernel", 0.5),
      watchJobCommand("install-proxmox-kernel", "1 2", 30),
      ...HOSTILE_VALUES.map((value) =>
        asRoot("admin", watchJobCommand("install-proxmox-ve", value, 0.5)),
      ),
      // Streaming the job's log: its first read, and on from a stored position.
      watchJobCommand("install-proxmox-kernel", "1 2", 30, { offset: 0, inode: null }),
      asRoot(
        "admin",
        watchJobCommand("install-proxmox-ve", "1 2", 30, {
          offset: 52_113,
          inode: "131074|1234567 256",
        }),
      ),
      clearJobCommand("install-proxmox-ve"),
    ],
  },
  {
    name: "steps/onboarding/PrepareHostname",
    samples: () => [
      HOSTNAME_PROBE,
      VERIFY_COMMAND,
      writeHostsCommand("0".repeat(64)),
      asRoot("admin", HOSTNAME_PROBE),
      asRoot("admin", writeHostsCommand("0".repeat(64))),
    ],
  },
  {
    name: "steps/onboarding/InstallProxmoxRepository",
    samples: () => [
      aptUpdateCommand(30),
      aptUpdateJobBody(600),
      aptUpdateJobBody(3),
      ...HOSTILE_VALUES.flatMap((value) => [
        repositoryProbe(`http://example.test/${value}`),
        fetchKeyringCommand(
          { url: value, sha256: "0".repeat(64), fingerprint: "A".repeat(40) },
          300,
        ),
      ]),
      ...["pve-install-repo.sources", "pve-enterprise.list", "sources.list"].flatMap((name) => [
        writeSourceCommand(name),
        removeSourceCommand(name),
      ]),
      asRoot("admin", repositoryProbe("http://download.proxmox.com/debian/pve")),
    ],
  },
  {
    name: "steps/onboarding/InstallProxmoxKernel+InstallProxmoxVe",
    samples: () => [
      KERNEL_PROBE,
      kernelJobBody(300),
      PVE_PROBE,
      packageStatesCommand(HOSTILE_VALUES),
      ...HOSTILE_VALUES.map((value) => {
        const plan = planPveJob(
          {
            // Package names come from the host's dpkg: hostile ones must stay words.
            states: new Map([
              [`linux-image-6.12${value}`, "installed"],
              ["os-prober", "installed"],
            ]),
            runningKernel: "6.17.2-1-pve",
            fqdn: value,
          },
          300,
        );
        return "body" in plan ? plan.body : "false";
      }),
    ],
  },
  {
    name: "steps/onboarding/RebootIntoPveKernel",
    samples: () => [REBOOT_PROBE, REBOOT_COMMAND, asRoot("admin", REBOOT_COMMAND)],
  },
  {
    name: "steps/onboarding/ConfigureProxmox",
    samples: () => [
      NETWORK_PROBE,
      prepareNetworkCommand("0".repeat(64), 120),
      APPLY_NETWORK,
      CANCEL_ROLLBACK,
      RESTORE_NETWORK,
      CLEAR_APPLY_RESULT,
      asRoot("admin", prepareNetworkCommand("0".repeat(64), 5)),
      asRoot("admin", APPLY_NETWORK),
      asRoot("admin", CANCEL_ROLLBACK),
      ENSURE_IMAGE_STORAGE,
      asRoot("admin", ENSURE_IMAGE_STORAGE),
    ],
  },
  {
    name: "steps/onboarding/decommission/RemoveApiToken",
    samples: () => [
      userListCommand(),
      ...HOSTILE_VALUES.flatMap((value) => [
        tokenListCommand(value),
        tokenRemoveCommand(value, value),
        asRoot("admin", tokenRemoveCommand("clupilot@pve", value)),
      ]),
    ],
  },
  {
    name: "ssh/withGroupMarker+killGroupCommand",
    samples: () => [
      ...HOSTILE_VALUES.map((value) => withGroupMarker(sh`echo ${value}`)),
      killGroupCommand(4242),
      killGroupCommand(2, 0),
    ],
  },
  {
    name: "console-key/authorized_keys",
    samples: () =>
      HOSTILE_VALUES.flatMap((line) => [
        appendKeyCommand(line),
        removeKeyCommand(line),
        hasKeyCommand(line),
        installKeyCommand(line),
      ]),
  },
];
