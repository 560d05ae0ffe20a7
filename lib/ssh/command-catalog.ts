import { OS_PROBE } from "@/lib/steps/host/check-operating-system";
import { PRIVILEGE_PROBE } from "@/lib/steps/host/connect-host";
import { asRoot } from "@/lib/steps/host/services";
import {
  buildEnvFile,
  CLEAR_STATUS,
  installUploadCommand,
  killBuildCommand,
  READ_STATUS,
  RESOLVE_BUILD_DIR,
  startBuildCommand,
  watchStatusCommand,
} from "@/lib/steps/host/build-vm-template/commands";
import { ACCESS_PROBE, accessCommand, type AccessAction } from "@/lib/steps/host/create-api-token";
import { killGroupCommand, uploadCommand, withGroupMarker } from "./commands";
import { sh } from "./quote";

/**
 * Every shell command the console can send to a host, with samples built from hostile values.
 * `lib/ssh/commands.test.ts` runs each sample through `sh -n` (spec: "Every command the step
 * sends must pass `sh -n`"). A step that builds commands adds an entry here, pointing at its
 * own exported builder. Imported by tests only, so it may depend on any step module.
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
    name: "steps/host/ConnectHost",
    samples: () => [PRIVILEGE_PROBE, asRoot("admin", PRIVILEGE_PROBE)],
  },
  {
    name: "steps/host/CheckOperatingSystem",
    samples: () => [OS_PROBE, asRoot("admin", OS_PROBE)],
  },
  {
    name: "steps/host/asRoot",
    samples: () =>
      HOSTILE_VALUES.flatMap((value) => [
        asRoot("root", sh`echo ${value}`),
        asRoot("admin", sh`printf %s ${value}`),
      ]),
  },
  {
    name: "steps/host/BuildVmTemplate",
    samples: () => [
      RESOLVE_BUILD_DIR,
      READ_STATUS,
      CLEAR_STATUS,
      killBuildCommand(),
      killBuildCommand(0),
      watchStatusCommand(30),
      watchStatusCommand(0.2),
      ...HOSTILE_PATHS.map((dir) => startBuildCommand(`/var/lib/clupilot/${dir}`)),
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
    name: "steps/host/CreateApiToken",
    samples: () => {
      const actions: AccessAction[] = [
        { kind: "createUser" },
        { kind: "createRole" },
        { kind: "fixRole", had: ["VM.Audit"] },
        { kind: "grantUser" },
        { kind: "createToken" },
        { kind: "rotateToken", why: "lost secret" },
        { kind: "grantToken" },
      ];
      const commands = [ACCESS_PROBE, ...actions.map(accessCommand)];
      return [...commands, ...commands.map((command) => asRoot("admin", command))];
    },
  },
  {
    name: "ssh/withGroupMarker+killGroupCommand",
    samples: () => [
      ...HOSTILE_VALUES.map((value) => withGroupMarker(sh`echo ${value}`)),
      killGroupCommand(4242),
      killGroupCommand(2, 0),
    ],
  },
];
