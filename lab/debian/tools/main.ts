import { isInstalled } from "../dpkg-status";
import { TOOL_ROOT } from "../lab-state";

/**
 * Entry of every simulated Debian tool: `main.ts <tool> [args…]`, run by the lab's tool server
 * (lab/tool-server) for the clients in lab/tools/bin, once per call as if it were its own
 * process. Tools provided by a package that is not installed on the lab host answer like bash
 * does for a missing command.
 */

const PROVIDED_BY: Record<string, string> = {
  ifreload: "ifupdown2",
  "debconf-set-selections": "debconf",
};

async function main(): Promise<number> {
  const [tool, ...argv] = process.argv.slice(2);
  if (!tool) return 2;
  const root = TOOL_ROOT;
  const pkg = PROVIDED_BY[tool];
  if (pkg !== undefined && !isInstalled(root, pkg)) {
    process.stderr.write(`bash: line 1: ${tool}: command not found\n`);
    return 127;
  }
  switch (tool) {
    case "apt-get":
    case "apt":
      return (await import("./apt-get")).aptGet(tool, root, argv);
    case "dpkg":
    case "dpkg-query":
      return (await import("./dpkg")).dpkgQuery(tool, root, argv);
    case "reboot":
    case "poweroff":
    case "halt":
      return (await import("./system")).reboot(tool, root, argv);
    case "shutdown":
      return (await import("./system")).shutdown(root, argv);
    case "systemctl":
      return (await import("./system")).systemctl(root, argv);
    case "systemd-run":
      return (await import("./systemd-run")).systemdRun(root, argv);
    case "hostname":
      return (await import("./system")).hostname(root, argv);
    case "hostnamectl":
      return (await import("./system")).hostnamectl(root, argv);
    case "debconf-set-selections":
      return (await import("./system")).debconfSetSelections(root, argv);
    case "ifreload":
      return (await import("./ifreload")).ifreload(root, argv);
    case "ip":
      return (await import("./ip")).ip(root, argv);
    case "ipmitool":
      return (await import("./ipmitool")).ipmitool(root, argv);
    case "timedatectl":
      return (await import("./timedatectl")).timedatectl(root, argv);
    default:
      process.stderr.write(`lab: unknown tool ${tool}\n`);
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
    process.stderr.write(
      `lab tool crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 70;
  },
);
