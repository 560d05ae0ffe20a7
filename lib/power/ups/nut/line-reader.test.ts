import net from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { NutLineReader, NutLineTooLong } from "./line-reader";

/** A connected loopback socket pair: what the reader reads, and the far end writing to it. */
async function socketPair(): Promise<{ near: net.Socket; far: net.Socket; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const accepted = new Promise<net.Socket>((resolve) => server.once("connection", resolve));
  const near = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1");
  const far = await accepted;
  return {
    near,
    far,
    close() {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}

let cleanup: (() => void) | null = null;
afterEach(() => cleanup?.());

const soon = () => performance.now() + 1000;
const timeout = () => new Error("timeout");

describe("NUT line reader", () => {
  it("hands out lines in order, across chunks, without their CR LF", async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const reader = new NutLineReader(pair.near, { maxLineLength: 1000 }, () => {});
    pair.far.write("BEGIN LIST VAR ups\r\nVAR ups ups.st");
    pair.far.write('atus "OL"\nEND LIST VAR ups\n');
    expect(await reader.next(soon(), timeout)).toBe("BEGIN LIST VAR ups");
    expect(await reader.next(soon(), timeout)).toBe('VAR ups ups.status "OL"');
    expect(await reader.next(soon(), timeout)).toBe("END LIST VAR ups");
  });

  it("gives up at the deadline when no line comes", async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const reader = new NutLineReader(pair.near, { maxLineLength: 1000 }, () => {});
    await expect(reader.next(performance.now() + 50, timeout)).rejects.toThrow("timeout");
  });

  it("ends on a peer that sends an endless line, instead of buffering it", async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const ended: Error[] = [];
    const reader = new NutLineReader(pair.near, { maxLineLength: 1000 }, (error) =>
      ended.push(error),
    );
    pair.far.write("x".repeat(5000));
    await expect(reader.next(soon(), timeout)).rejects.toBeInstanceOf(NutLineTooLong);
    expect(ended[0]).toBeInstanceOf(NutLineTooLong);
  });

  it("rejects a waiting read when the peer closes, after the lines it sent", async () => {
    const pair = await socketPair();
    cleanup = pair.close;
    const reader = new NutLineReader(pair.near, { maxLineLength: 1000 }, () => {});
    pair.far.end("OK Goodbye\n");
    expect(await reader.next(soon(), timeout)).toBe("OK Goodbye");
    await expect(reader.next(soon(), timeout)).rejects.toThrow("closed");
  });
});
