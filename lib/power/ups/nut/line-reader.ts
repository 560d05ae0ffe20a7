import type { Socket } from "node:net";

/** The peer sent more than a line may hold without ending it: not a NUT server talking. */
export class NutLineTooLong extends Error {
  override readonly name = "NutLineTooLong";
}

/**
 * The lines a NUT server sends on one socket, handed out one at a time with a deadline. The
 * protocol is strictly request → answer, so at most one reader waits at a time.
 */
export class NutLineReader {
  private buffer = "";
  private readonly lines: string[] = [];
  private ended: Error | null = null;
  private waiter: { resolve(line: string): void; reject(error: Error): void } | null = null;

  constructor(
    socket: Socket,
    private readonly limits: { maxLineLength: number },
    private readonly onEnd: (error: Error) => void,
  ) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.push(chunk));
    socket.on("error", (error) => this.end(error));
    socket.on("close", () => this.end(new Error("closed")));
  }

  /** The next line (without its line break); rejects when the socket ends or time runs out. */
  next(deadlineAt: number, onTimeout: () => Error): Promise<string> {
    const line = this.lines.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.ended !== null) return Promise.reject(this.ended);
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          this.waiter = null;
          reject(onTimeout());
        },
        Math.max(0, deadlineAt - performance.now()),
      );
      this.waiter = {
        resolve: (next) => {
          clearTimeout(timer);
          resolve(next);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  private push(chunk: string): void {
    this.buffer += chunk;
    let newline: number;
    while ((newline = this.buffer.indexOf("\n")) >= 0) {
      this.lines.push(this.buffer.slice(0, newline).replace(/\r$/, ""));
      this.buffer = this.buffer.slice(newline + 1);
    }
    // A peer that never ends its line would grow the buffer without bound.
    if (this.buffer.length > this.limits.maxLineLength) {
      this.end(new NutLineTooLong(`a line longer than ${this.limits.maxLineLength} characters`));
      return;
    }
    this.wake();
  }

  private wake(): void {
    const waiter = this.waiter;
    if (waiter === null) return;
    const line = this.lines.shift();
    if (line !== undefined) {
      this.waiter = null;
      waiter.resolve(line);
    } else if (this.ended !== null) {
      this.waiter = null;
      waiter.reject(this.ended);
    }
  }

  private end(error: Error): void {
    if (this.ended !== null) return;
    this.ended = error;
    this.onEnd(error);
    this.wake();
  }
}
