import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { CONTROL_PREFIX, startWebhookReceiver } from "./receiver";

const USAGE = `Usage: npm run lab:receiver -- [--port N]

Starts the lab webhook receiver on 127.0.0.1 and prints every delivery it receives.
Give the console a notification target http://127.0.0.1:PORT/<any path> (one path per target
keeps their deliveries apart). Type a command and Enter to change how it answers:

  ok | fail | hang     answer 200, 500, or never (to every path)
  fail N               answer 500 to the next N requests, then as before
  down | up            stop listening (connections refused) / listen again
  list                 print what arrived so far as JSON

The same over HTTP: GET ${CONTROL_PREFIX}, POST ${CONTROL_PREFIX}/mode?mode=fail,
POST ${CONTROL_PREFIX}/fail-next?count=3 (add &path=/x for one path).
`;

const { values } = parseArgs({
  options: { port: { type: "string" }, help: { type: "boolean", short: "h" } },
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const port = values.port === undefined ? 0 : Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be a port number, not ${values.port}\n${USAGE}`);
  process.exit(2);
}

const receiver = await startWebhookReceiver({
  port,
  onRequest: (r) =>
    process.stdout.write(
      `#${r.seq} ${r.at} ${r.method} ${r.path} → ${r.answered ?? "hanging"}\n  content-type: ${r.headers["content-type"] ?? "-"}\n  ${r.body.replaceAll("\n", "\n  ")}\n`,
    ),
});
process.stdout.write(`lab webhook receiver on ${receiver.url("/")} (type "help" for commands)\n`);

const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const [command, arg] = line.trim().split(/\s+/);
  const done = (what: string) => process.stdout.write(`${what}\n`);
  if (command === "ok" || command === "hang")
    return (receiver.setMode(command), done(`answering ${command}`));
  if (command === "fail" && arg)
    return (receiver.failNext(Number(arg)), done(`next ${arg} answered 500`));
  if (command === "fail") return (receiver.setMode("fail"), done("answering 500"));
  if (command === "down") return void receiver.down().then(() => done("down: connections refused"));
  if (command === "up") return void receiver.up().then(() => done(`up on ${receiver.url("/")}`));
  if (command === "list") return done(JSON.stringify(receiver.received(), null, 2));
  if (command) process.stdout.write(USAGE);
});

const shutdown = () => {
  lines.close();
  void receiver.close().then(() => process.exit(0));
};
process.on("SIGINT", shutdown);
process.on("SIGTERM", shutdown);
