import { describe, expect, it } from "vitest";

import { parseBmcReport } from "./bmc-report";

/*
 * `ipmitool lan print` as ipmitool 1.8.19 (Debian) prints it, captured against Debian's ipmi_sim
 * after `lan set 1 ipsrc static`, `ipaddr 192.0.2.201`, `macaddr 52:54:00:12:34:56`, with the
 * command's own end mark.
 */
const STATIC = `Unable to Get Channel Cipher Suites
Set in Progress         : Set Complete
Auth Type Support       : NONE MD2 MD5 PASSWORD 
Auth Type Enable        : Callback : NONE MD2 MD5 PASSWORD 
                        : User     : NONE MD2 MD5 PASSWORD 
                        : Admin    : NONE MD2 MD5 PASSWORD 
IP Address Source       : Static Address
IP Address              : 192.0.2.201
Subnet Mask             : 0.0.0.0
MAC Address             : 52:54:00:12:34:56
Default Gateway IP      : 0.0.0.0
Default Gateway MAC     : 00:00:00:00:00:00
Cipher Suite Priv Max   : aaaaaaaaaaaaaaa
                        :     X=Cipher Suite Unused
Bad Password Threshold  : Not Available
clupilot-bmc: exit=0
`;

describe("parseBmcReport", () => {
  it("reads the LAN address, its source and the MAC", () => {
    expect(parseBmcReport(STATIC)).toEqual({
      kind: "found",
      address: "192.0.2.201",
      mac: "52:54:00:12:34:56",
      addressSource: "Static Address",
    });
  });

  it("a BMC without an address (0.0.0.0) is no suggestion", () => {
    const unset = STATIC.replace("192.0.2.201", "0.0.0.0");
    expect(parseBmcReport(unset)).toMatchObject({ kind: "no-address" });
  });

  it("an all-zero MAC is no MAC", () => {
    const report = parseBmcReport(STATIC.replace("52:54:00:12:34:56", "00:00:00:00:00:00"));
    expect(report).toMatchObject({ kind: "found", mac: null });
  });

  it("tells a missing device, a missing tool and any other failure apart", () => {
    // The real ipmitool's words on a machine without /dev/ipmi0 (exit 1).
    expect(
      parseBmcReport(
        "Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory\nclupilot-bmc: exit=1\n",
      ),
    ).toMatchObject({ kind: "no-device" });
    expect(parseBmcReport("clupilot-bmc: no-ipmitool\n")).toMatchObject({ kind: "no-tool" });
    expect(parseBmcReport("Get LAN Parameter failed\nclupilot-bmc: exit=1\n")).toEqual({
      kind: "failed",
      detail:
        "ipmitool lan print on the host ended with exit 1 without a LAN address: Get LAN Parameter failed",
    });
  });
});
