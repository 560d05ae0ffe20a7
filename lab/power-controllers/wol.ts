import dgram from "node:dgram";

import type { LabChassis } from "./chassis";

export type LabWol = { port: number; stop(): Promise<void> };

/**
 * A Wake-on-LAN listener on loopback for lab nodes: a magic packet (six 0xFF bytes, then a
 * MAC sixteen times) whose MAC is a node's powers that node on — unless its chassis is
 * unreachable (the packet is lost, as on a wrong subnet). Anything else is ignored, as a NIC does.
 */
export async function startLabWol(nodes: Map<string, LabChassis>): Promise<LabWol> {
  const socket = dgram.createSocket("udp4");
  socket.on("message", (packet) => {
    const mac = macOfMagicPacket(packet);
    const chassis = mac === null ? undefined : nodes.get(mac);
    if (!chassis || chassis.faults.unreachable) return;
    chassis.requestPowerOn("wake-on-lan");
  });
  const port = await new Promise<number>((resolve, reject) => {
    socket.once("error", reject);
    socket.bind(0, "127.0.0.1", () => resolve(socket.address().port));
  });
  return { port, stop: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}

export function macOfMagicPacket(packet: Buffer): string | null {
  if (packet.length < 102) return null;
  for (let i = 0; i < 6; i++) if (packet[i] !== 0xff) return null;
  const mac = packet.subarray(6, 12);
  for (let i = 1; i < 16; i++) if (!packet.subarray(6 + i * 6, 12 + i * 6).equals(mac)) return null;
  return [...mac].map((b) => b.toString(16).padStart(2, "0")).join(":");
}
