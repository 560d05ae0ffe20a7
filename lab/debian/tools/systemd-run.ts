import { parseTimeSpan, startTimer, transientState } from "../transient-units";

/**
 * Simulated `systemd-run` for transient timers: `systemd-run [--unit=NAME] --on-active=SPAN
 * [--description=TEXT] [--timer-property=…] [-p …] [--collect] [--quiet] [--] COMMAND [ARG…]`
 * creates `NAME.timer`, which runs COMMAND as `NAME.service` after SPAN (lab/debian/
 * transient-units.ts). A service without a timer is not simulated: the lab says so.
 */

const UNIT_NAME = /^[A-Za-z0-9:_.\\-]+$/;
/** Options that take a value, as `--opt=value` or `--opt value`. */
const WITH_VALUE = new Set([
  "--unit",
  "-u",
  "--on-active",
  "--description",
  "--timer-property",
  "--property",
  "-p",
  "--slice",
  "--uid",
  "--gid",
  "--working-directory",
  "--setenv",
  "-E",
]);
const FLAGS = new Set(["--collect", "-G", "--quiet", "-q", "--no-block", "--system"]);

export function systemdRun(root: string, argv: string[]): number {
  const options = new Map<string, string>();
  const flags = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      i++;
      break;
    }
    if (!arg.startsWith("-")) break;
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    if (WITH_VALUE.has(name)) {
      const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined) {
        process.stderr.write(`systemd-run: option '${name}' requires an argument\n`);
        return 1;
      }
      options.set(name === "-u" ? "--unit" : name, value);
    } else if (FLAGS.has(arg)) flags.add(arg);
    else {
      process.stderr.write(`systemd-run: unrecognized option '${arg}'\n`);
      return 1;
    }
  }
  const command = argv.slice(i);
  if (command.length === 0) {
    process.stderr.write("Command line to execute required.\n");
    return 1;
  }
  const span = options.get("--on-active");
  if (span === undefined) {
    process.stderr.write(
      "lab systemd-run: only timers (--on-active=…) are simulated; a plain transient service is not\n",
    );
    return 1;
  }
  const seconds = parseTimeSpan(span);
  if (seconds === null) {
    process.stderr.write(`Failed to parse timer value: ${span}\n`);
    return 1;
  }
  const unit = (options.get("--unit") ?? `run-u${process.pid}`).replace(/\.(service|timer)$/, "");
  if (!UNIT_NAME.test(unit)) {
    process.stderr.write(`Failed to mangle unit name: Invalid argument\n`);
    return 1;
  }
  if (transientState(root, unit) !== null) {
    process.stderr.write(
      `Failed to start transient timer unit: Unit ${unit}.timer was already loaded or has a fragment file.\n`,
    );
    return 1;
  }
  const now = Date.now();
  startTimer(
    root,
    {
      unit,
      description: options.get("--description") ?? command.join(" "),
      onActiveSec: seconds,
      setAt: now,
      firesAt: now + Math.round(seconds * 1000),
      argv: command,
    },
    process.env,
  );
  if (!flags.has("--quiet") && !flags.has("-q"))
    process.stderr.write(
      `Running timer as unit: ${unit}.timer\nWill run service as unit: ${unit}.service\n`,
    );
  return 0;
}
