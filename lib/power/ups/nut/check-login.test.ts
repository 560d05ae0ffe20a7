import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { TNutSource } from "../reading";
import { checkNutLogin } from "./check-login";

/*
 * The answers Debian's upsd never gives (it takes any USERNAME and PASSWORD), from a scripted
 * server: other NUT servers refuse them, and something that is no upsd answers nonsense. What
 * real upsd answers is in app/api/power/ups/ups-login-check.int.test.ts.
 */

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
});

/** A server answering each line with `answer(line)` (null: close), recording what it heard. */
async function scripted(
  answer: (line: string) => string | null,
  greeting?: string,
): Promise<{ port: number; heard: string[] }> {
  const heard: string[] = [];
  const server = net.createServer((socket) => {
    if (greeting) socket.write(greeting);
    let buffer = "";
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        const line = buffer.slice(0, i);
        buffer = buffer.slice(i + 1);
        heard.push(line);
        const reply = answer(line);
        if (reply === null) socket.end();
        else socket.write(reply);
      }
    });
    socket.on("error", () => {});
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as net.AddressInfo).port, heard };
}

const source = (port: number): TNutSource => ({
  type: "nut",
  host: "127.0.0.1",
  port,
  upsName: "ups1",
  username: "mon",
  password: "pw",
});

describe("trying a NUT login before saving", () => {
  it("USERNAME refused: the user name and password fields say which command upsd refused, with its code", async () => {
    const { port } = await scripted((line) =>
      line.startsWith("USERNAME") ? "ERR INVALID-USERNAME\n" : "OK\n",
    );
    const refused = await checkNutLogin(source(port));
    const words = `upsd at 127.0.0.1:${port} refused USERNAME (ERR INVALID-USERNAME): check the user name and password against upsd.users.`;
    expect(refused).toEqual({
      message: `Nothing was saved: ${words}`,
      fieldErrors: { username: [words], password: [words] },
    });
  });

  it("something that is no upsd on the port: the address and the port", async () => {
    const { port } = await scripted(() => null, "SSH-2.0-OpenSSH_9.2p1\r\n");
    const refused = await checkNutLogin(source(port));
    expect(Object.keys(refused!.fieldErrors).sort()).toEqual(["host", "port"]);
    expect(refused!.fieldErrors.host![0]).toMatch(/the NUT protocol does not allow/);
  });

  it("logged in, but the driver has no data (DATA-STALE): the settings are right, saved; it says LOGOUT", async () => {
    const { port, heard } = await scripted((line) => {
      if (line.startsWith("LIST VAR")) return "ERR DATA-STALE\n";
      if (line === "LOGOUT") return "OK Goodbye\n";
      return "OK\n";
    });
    expect(await checkNutLogin(source(port))).toBeNull();
    expect(heard).toEqual([
      'USERNAME "mon"',
      'PASSWORD "pw"',
      "LOGIN ups1",
      "LIST VAR ups1",
      "LOGOUT",
    ]);
  });
});
