import type { Readable } from "node:stream";

import type { ServerChannel } from "ssh2";

/**
 * Carries a command's stdout and stderr onto its SSH channel one write at a time, in the order
 * the output arrived — what sshd does with its single channel buffer.
 *
 * Piping both streams straight into ssh2's server channel loses output: the channel keeps one
 * parked chunk per stream for when the client's window is used up, but a window adjust resumes
 * only one of them, and a stdout chunk once parked is never cleared, so a later adjust re-sends
 * it and never resumes a parked stderr chunk (ssh2 1.17.0, lib/server.js CHANNEL_WINDOW_ADJUST).
 * A command printing megabytes to stdout and then a line to stderr then hangs for good. Writing
 * one chunk at a time means at most one is parked, and forgetting it once its write completed
 * keeps the next adjust from replaying it.
 */
export class ChannelOutput {
  private readonly queue: { stream: "stdout" | "stderr"; chunk: Buffer }[] = [];
  private queuedBytes = 0;
  private writing = false;
  private stopped = false;
  private readonly idle: (() => void)[] = [];
  private readonly sources: Readable[] = [];

  /** Past this many queued bytes the command's pipes are paused, as a full socket would. */
  static readonly HIGH_WATER_BYTES = 256 * 1024;

  constructor(private readonly channel: ServerChannel) {}

  /** Starts reading one of the command's output pipes. */
  add(stream: "stdout" | "stderr", source: Readable): void {
    this.sources.push(source);
    source.on("data", (chunk: Buffer) => {
      if (this.stopped) return;
      this.queue.push({ stream, chunk });
      this.queuedBytes += chunk.length;
      if (this.queuedBytes > ChannelOutput.HIGH_WATER_BYTES) this.pauseSources();
      this.pump();
    });
  }

  /** Resolves once everything read so far has been handed to the SSH connection. */
  drained(): Promise<void> {
    if (!this.writing && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** The channel is gone: drop what is queued and read no more. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.settleIdle();
  }

  private pump(): void {
    if (this.writing || this.stopped) return;
    const next = this.queue.shift();
    if (next === undefined) {
      this.settleIdle();
      return;
    }
    this.writing = true;
    this.queuedBytes -= next.chunk.length;
    const target = next.stream === "stdout" ? this.channel : this.channel.stderr;
    target.write(next.chunk, () => {
      this.writing = false;
      forgetParkedChunks(this.channel);
      if (this.queuedBytes <= ChannelOutput.HIGH_WATER_BYTES / 2) this.resumeSources();
      this.pump();
    });
  }

  private pauseSources(): void {
    for (const source of this.sources) source.pause();
  }

  private resumeSources(): void {
    for (const source of this.sources) if (!source.destroyed) source.resume();
  }

  private settleIdle(): void {
    for (const resolve of this.idle.splice(0)) resolve();
  }
}

type ParkedChunks = {
  _chunk?: Buffer;
  _chunkcb?: () => void;
  _chunkErr?: Buffer;
  _chunkcbErr?: () => void;
};

/** No write is in flight here, so whatever ssh2 still holds as parked was already sent. */
function forgetParkedChunks(channel: ServerChannel): void {
  const parked = channel as unknown as ParkedChunks;
  parked._chunk = undefined;
  parked._chunkcb = undefined;
  parked._chunkErr = undefined;
  parked._chunkcbErr = undefined;
}
