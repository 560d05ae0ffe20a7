/**
 * What a host says about its own BMC (issue 30, item 1): `ipmitool lan print` run on the host,
 * in-band through the kernel's IPMI driver. Only ever a suggestion for the admin's controller
 * form — never set on its own: a BMC's LAN address may sit on a management network the console
 * cannot reach, and the login is not the host's to tell.
 */

const MARK = "clupilot-bmc:";

/**
 * Run as root (the IPMI device is root's). Lists the first LAN channel, as `ipmitool lan print`
 * without a channel does. Its exit status is printed, not returned: the parser tells a host
 * without the tool from one without a BMC from one whose BMC refused.
 */
export const BMC_REPORT_COMMAND = [
  "if command -v ipmitool >/dev/null 2>&1; then",
  "  ipmitool lan print 2>&1",
  `  echo "${MARK} exit=$?"`,
  "else",
  `  echo "${MARK} no-ipmitool"`,
  "fi",
].join("\n");

export type BmcReport =
  /** The BMC has a LAN address: the suggestion. */
  | { kind: "found"; address: string; mac: string | null; addressSource: string | null }
  /** A BMC answered, but without a usable LAN address (0.0.0.0: not configured). */
  | { kind: "no-address"; detail: string }
  /** No in-band IPMI device: no BMC, or its kernel drivers are not loaded. */
  | { kind: "no-device"; detail: string }
  /** ipmitool is not installed on the host. */
  | { kind: "no-tool"; detail: string }
  /** Anything else, with the tool's own words. */
  | { kind: "failed"; detail: string };

const NO_DEVICE = /Could not open device at \/dev\/ipmi0/;

/** The `Name : value` lines of `ipmitool lan print` (continuation lines have no name). */
function fields(output: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const line of output.split("\n")) {
    const match = /^([A-Za-z0-9][^:]*?)\s*:\s(.*)$/.exec(line);
    if (match) found.set(match[1]!.trim(), match[2]!.trim());
  }
  return found;
}

const ZERO_MAC = "00:00:00:00:00:00";

export function parseBmcReport(stdout: string): BmcReport {
  if (stdout.includes(`${MARK} no-ipmitool`)) {
    return {
      kind: "no-tool",
      detail:
        "ipmitool is not installed on the host, so it cannot tell its BMC's address: install it there (apt install ipmitool) and ask again, or enter the BMC's address yourself.",
    };
  }
  const exit = new RegExp(`${MARK} exit=(\\d+)`).exec(stdout);
  const output = stdout.replace(new RegExp(`${MARK}.*\\n?`, "g"), "").trim();
  if (NO_DEVICE.test(output)) {
    return {
      kind: "no-device",
      detail:
        "The host has no IPMI device (/dev/ipmi0): it has no BMC, or the drivers are not loaded (modprobe ipmi_si ipmi_devintf on the host, then ask again). A Redfish-only BMC or Wake-on-LAN is entered by hand.",
    };
  }
  const lan = fields(output);
  const address = lan.get("IP Address");
  if (address === undefined) {
    const said = output.split("\n").filter(Boolean).slice(-1)[0] ?? "no output";
    return {
      kind: "failed",
      detail: `ipmitool lan print on the host ended with exit ${exit?.[1] ?? "unknown"} without a LAN address: ${said}`,
    };
  }
  if (address === "0.0.0.0") {
    return {
      kind: "no-address",
      detail:
        "The host's BMC has no LAN address configured (IP Address 0.0.0.0): give it one in its setup (ipmitool lan set 1 ipaddr …), then ask again.",
    };
  }
  const mac = lan.get("MAC Address") ?? null;
  return {
    kind: "found",
    address,
    mac: mac === null || mac === ZERO_MAC ? null : mac,
    addressSource: lan.get("IP Address Source") ?? null,
  };
}
