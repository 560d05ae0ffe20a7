/**
 * One host's out-of-band power controller. "Could not ask" is never "off": every way of not
 * getting a clear answer is `unknown`, with the reason and which part to fix.
 */
export type PowerProblem =
  /** Nothing answered at the address (refused, silent, no route). */
  | "unreachable"
  /** The controller answered and refused the user or password. */
  | "credentials"
  /** Redfish: another TLS certificate than the pinned one. */
  | "certificate"
  /** It answered, but not with something we understand (a wrong system id, an error). */
  | "answer"
  /** This kind of controller cannot tell (Wake-on-LAN has no way back). */
  | "unsupported";

export type PowerReading =
  | { state: "on"; detail: string }
  | { state: "off"; detail: string }
  | { state: "unknown"; problem: PowerProblem; reason: string };

export type PowerOnResult =
  { sent: true; detail: string } | { sent: false; problem: PowerProblem; reason: string };

export interface PowerController {
  readonly kind: "redfish" | "ipmi" | "wol" | "pve-wol";
  /** Where it is, for messages: `Redfish at 10.0.0.5:443`. Never a secret. */
  readonly where: string;
  readPowerState(): Promise<PowerReading>;
  /** Asks the machine to power on. `sent` is that the controller took the request, not that it booted. */
  powerOn(): Promise<PowerOnResult>;
}

export function hostPort(address: string, port: number): string {
  return `${address.includes(":") ? `[${address}]` : address}:${port}`;
}
