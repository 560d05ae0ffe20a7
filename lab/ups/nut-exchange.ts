import net from "node:net";

/**
 * Sends NUT protocol lines one by one on one fresh connection and collects each answer (one
 * line, or BEGIN … END for a LIST), as a person with `nc` would: for the parity tests, which
 * compare the lab's answers with upsd's byte for byte, and for acting as another NUT client
 * (a primary upsmon declaring FSD). Lines go out verbatim, so tests can send malformed ones.
 */
export async function nutExchange(
  port: number,
  lines: readonly string[],
  { timeoutMs = 3000 }: { timeoutMs?: number } = {},
): Promise<string[][]> {
  const socket = net.connect({ host: "127.0.0.1", port });
  socket.setEncoding("utf8");
  let buffer = "";
  let closed = false;
  let wake: (() => void) | null = null;
  socket.on("data", (chunk: string) => {
    buffer += chunk;
    wake?.();
  });
  socket.on("close", () => {
    closed = true;
    wake?.();
  });
  const errored = new Promise<never>((_, reject) => socket.once("error", reject));
  errored.catch(() => {});
  await Promise.race([new Promise((resolve) => socket.once("connect", resolve)), errored]);

  const nextLine = async (deadline: number): Promise<string | null> => {
    for (;;) {
      const newline = buffer.indexOf("\n");
      if (newline >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + 1);
        return line;
      }
      if (closed) return null;
      const remaining = deadline - Date.now();
      if (remaining <= 0)
        throw new Error(`no answer within ${timeoutMs} ms (got ${JSON.stringify(buffer)})`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  };

  const answers: string[][] = [];
  try {
    for (const line of lines) {
      const deadline = Date.now() + timeoutMs;
      socket.write(`${line}\n`);
      const first = await nextLine(deadline);
      if (first === null) {
        answers.push(["(closed)"]);
        break;
      }
      const answer = [first];
      if (first.startsWith("BEGIN ")) {
        for (;;) {
          const next = await nextLine(deadline);
          if (next === null) throw new Error(`connection closed inside ${first}`);
          answer.push(next);
          if (next.startsWith("END ")) break;
        }
      }
      answers.push(answer);
    }
  } finally {
    socket.destroy();
  }
  return answers;
}
