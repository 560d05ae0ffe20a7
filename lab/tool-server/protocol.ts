/**
 * The wire between a tool client (lab/tools/client) and the tool server: frames of one type
 * byte, a 32-bit big-endian payload length and the payload, both ways on one TCP connection.
 *
 * Client → server: `R` the request (NUL-separated: token, tool, cwd, pid, ppid, argc, the
 * arguments, then `NAME=value` environment entries), `I` stdin data (empty = end of stdin).
 * Server → client: `O` stdout, `E` stderr, `W` the tool reads stdin now, `X` the exit code
 * (decimal), `F` the server refused the request (a message for the person).
 */

export const FRAME = {
  request: "R",
  stdin: "I",
  stdout: "O",
  stderr: "E",
  wantStdin: "W",
  exit: "X",
  refused: "F",
} as const;

/** A request larger than any argv + environment a kernel accepts (ARG_MAX is 2 MiB here). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

export function frame(type: string, payload: Buffer | string = ""): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const head = Buffer.alloc(5);
  head.write(type, 0, "latin1");
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

/** Cuts a byte stream into frames; throws on a frame larger than MAX_FRAME_BYTES. */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): { type: string; payload: Buffer }[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: { type: string; payload: Buffer }[] = [];
    while (this.buffered.length >= 5) {
      const length = this.buffered.readUInt32BE(1);
      if (length > MAX_FRAME_BYTES) throw new Error(`a frame of ${length} bytes is too large`);
      if (this.buffered.length < 5 + length) break;
      frames.push({
        type: this.buffered.toString("latin1", 0, 1),
        payload: this.buffered.subarray(5, 5 + length),
      });
      this.buffered = this.buffered.subarray(5 + length);
    }
    return frames;
  }
}

export type ToolRequest = {
  token: string;
  tool: string;
  cwd: string;
  pid: number;
  ppid: number;
  argv: string[];
  env: Record<string, string>;
};

export function parseRequest(payload: Buffer): ToolRequest | null {
  const fields = payload.toString("utf8").split("\0");
  const [token, tool, cwd, pid, ppid, argc] = fields;
  const count = Number(argc);
  if (
    token === undefined ||
    !tool ||
    !cwd?.startsWith("/") ||
    !/^\d+$/.test(pid ?? "") ||
    !/^\d+$/.test(ppid ?? "") ||
    !Number.isInteger(count) ||
    count < 0 ||
    fields.length < 6 + count
  )
    return null;
  const env: Record<string, string> = {};
  for (const entry of fields.slice(6 + count)) {
    const eq = entry.indexOf("=");
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1);
  }
  return {
    token,
    tool,
    cwd,
    pid: Number(pid),
    ppid: Number(ppid),
    argv: fields.slice(6, 6 + count),
    env,
  };
}
