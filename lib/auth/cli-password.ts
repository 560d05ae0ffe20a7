import readline from "node:readline";

/**
 * Reads a password for the admin CLI. Piped stdin (automation): its first line. A terminal:
 * asks on stderr and reads with echo off, twice, so a typo does not lock anyone out. Never from
 * argv, where `ps` and shell history would show it.
 */
export async function readPassword(stdin: NodeJS.ReadStream = process.stdin): Promise<string> {
  if (!stdin.isTTY) return firstLine(stdin);
  const first = await promptHidden(stdin, "Password: ");
  const second = await promptHidden(stdin, "Repeat password: ");
  if (first !== second)
    throw new Error("The two passwords differ. Nothing was changed; run it again.");
  return first;
}

async function firstLine(stdin: NodeJS.ReadStream): Promise<string> {
  const lines = readline.createInterface({ input: stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  return "";
}

function promptHidden(stdin: NodeJS.ReadStream, prompt: string): Promise<string> {
  return new Promise((resolve, reject) => {
    process.stderr.write(prompt);
    let value = "";
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding("utf8");
    const done = (error?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === "\r" || char === "\n") return done();
        if (char === "\u0003") return done(new Error("Cancelled."));
        if (char === "\u007f" || char === "\b") value = value.slice(0, -1);
        else value += char;
      }
    };
    stdin.on("data", onData);
  });
}
