import dgram from "node:dgram";

import type { PowerController, PowerOnResult, PowerReading } from "./controller";

export type WolOptions = {
  /** `aa:bb:cc:dd:ee:ff` */
  mac: string;
  /** The broadcast address of the host's network (or a directed one a router forwards). */
  broadcastAddress: string;
  port: number;
};

/** The magic packet: six bytes 0xFF, then the MAC sixteen times. */
export function magicPacket(mac: string): Buffer {
  const bytes = Buffer.from(mac.replace(/[^0-9a-fA-F]/g, ""), "hex");
  if (bytes.length !== 6) throw new Error(`not a MAC address: ${mac}`);
  return Buffer.concat([Buffer.alloc(6, 0xff), ...Array.from({ length: 16 }, () => bytes)]);
}

/**
 * Wake-on-LAN: a magic packet over UDP to the broadcast address the admin gave. It can wake a
 * machine and nothing more: it cannot read a power state (always `unknown`, "unsupported") and
 * cannot tell whether the packet arrived — whether the host came up is for its API to say.
 */
export function wolController(options: WolOptions): PowerController {
  const where = `Wake-on-LAN to ${options.mac} via ${options.broadcastAddress}:${options.port}`;
  return {
    kind: "wol",
    where,
    readPowerState(): Promise<PowerReading> {
      return Promise.resolve({
        state: "unknown",
        problem: "unsupported",
        reason: `${where} cannot read a power state; whether the host is up is for its API to say.`,
      });
    },
    powerOn(): Promise<PowerOnResult> {
      const packet = magicPacket(options.mac);
      return new Promise((resolve) => {
        const socket = dgram.createSocket("udp4");
        const finish = (result: PowerOnResult) => {
          socket.close();
          resolve(result);
        };
        socket.once("error", (error) =>
          finish({ sent: false, problem: "unreachable", reason: `${where}: ${error.message}.` }),
        );
        socket.bind(0, () => {
          socket.setBroadcast(true);
          socket.send(packet, options.port, options.broadcastAddress, (error) =>
            error
              ? finish({
                  sent: false,
                  problem: "unreachable",
                  reason: `${where}: ${error.message}.`,
                })
              : finish({ sent: true, detail: `${where}: magic packet sent` }),
          );
        });
      });
    },
  };
}
