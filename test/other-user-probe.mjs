/**
 * What another local user of the machine can do against the embedded PostgreSQL: tests copy
 * this file to a folder that user can reach and run it as that user (spawn with uid/gid). It
 * uses Node's own modules only, because that user cannot reach the repository's node_modules
 * when the clone is under /root.
 *
 * The job is one JSON line on stdin; the answer one JSON line on stdout.
 *   { "login": { "port": 5432, "passwords": [null, "", "x"] }, "read": ["/file"], "sockets": ["/tmp/.s.PGSQL.5432"] }
 *     → { "login": ["refused: …" | "accepted" | "error: …"], "read": [...], "sockets": [...] }
 *   { "watch": { "trees": ["/dir"] } }
 *     → prints "watching" once the first pass is done, reads every file it can under the trees
 *       until stdin ends, then { "passes": n, "readable": { "/path": "content" } }
 */
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

const sha256 = (bytes) => crypto.createHash("sha256").update(bytes).digest();
const hmac = (key, text) => crypto.createHmac("sha256", key).update(text).digest();

/** The PostgreSQL protocol's startup and SCRAM-SHA-256 exchange, as far as the server lets in. */
function login(port, password) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let pending = Buffer.alloc(0);
    let clientFirstBare = "";
    const done = (outcome) => {
      socket.destroy();
      resolve(outcome);
    };
    const send = (type, body) => {
      const head = Buffer.alloc(5);
      head.write(type);
      head.writeInt32BE(4 + body.length, 1);
      socket.write(Buffer.concat([head, body]));
    };
    socket.on("error", (error) => done(`error: ${error.code}`));
    socket.on("connect", () => {
      const params = Buffer.from("user\0clupilot\0database\0postgres\0\0");
      const head = Buffer.alloc(8);
      head.writeInt32BE(8 + params.length);
      head.writeInt32BE(196608, 4); // protocol 3.0
      socket.write(Buffer.concat([head, params]));
    });
    socket.on("data", (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5 && pending.length >= 1 + pending.readInt32BE(1)) {
        const type = String.fromCharCode(pending[0]);
        const body = pending.subarray(5, 1 + pending.readInt32BE(1));
        pending = pending.subarray(1 + pending.readInt32BE(1));
        if (type === "E") return done(`refused: ${errorFields(body)}`);
        if (type !== "R") continue;
        const code = body.readInt32BE(0);
        if (code === 0) return done("accepted");
        if (code === 10) {
          if (password === null) return done("refused: the server asks for a password");
          clientFirstBare = `n=,r=${crypto.randomBytes(18).toString("base64")}`;
          const first = Buffer.from(`n,,${clientFirstBare}`);
          const length = Buffer.alloc(4);
          length.writeInt32BE(first.length);
          send("p", Buffer.concat([Buffer.from("SCRAM-SHA-256\0"), length, first]));
        } else if (code === 11) {
          const serverFirst = body.subarray(4).toString();
          const attributes = Object.fromEntries(
            serverFirst.split(",").map((pair) => [pair[0], pair.slice(2)]),
          );
          const salt = Buffer.from(attributes.s, "base64");
          const salted = crypto.pbkdf2Sync(password, salt, Number(attributes.i), 32, "sha256");
          const clientKey = hmac(salted, "Client Key");
          const withoutProof = `c=biws,r=${attributes.r}`;
          const signature = hmac(
            sha256(clientKey),
            `${clientFirstBare},${serverFirst},${withoutProof}`,
          );
          const proof = Buffer.from(clientKey.map((byte, i) => byte ^ signature[i]));
          send("p", Buffer.from(`${withoutProof},p=${proof.toString("base64")}`));
        } else if (code !== 12) {
          return done(`refused: the server asks for authentication method ${code}`);
        }
      }
    });
  });
}

function errorFields(body) {
  const fields = {};
  for (let at = 0; at < body.length && body[at] !== 0;) {
    const end = body.indexOf(0, at + 1);
    fields[String.fromCharCode(body[at])] = body.subarray(at + 1, end).toString();
    at = end + 1;
  }
  return `${fields.C} ${fields.M}`;
}

function read(file) {
  try {
    fs.readFileSync(file);
    return "read";
  } catch (error) {
    return `error: ${error.code}`;
  }
}

function socket(file) {
  return new Promise((resolve) => {
    const connection = net.connect(file);
    connection.on("connect", () => {
      connection.destroy();
      resolve("connected");
    });
    connection.on("error", (error) => resolve(`error: ${error.code}`));
  });
}

function readEverything(tree, readable) {
  let entries;
  try {
    entries = fs.readdirSync(tree, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const file = path.join(tree, entry.name);
    if (entry.isDirectory()) readEverything(file, readable);
    else if (entry.isFile()) {
      try {
        readable[file] = fs.readFileSync(file, "utf8");
      } catch {
        // not readable by this user: what the test wants for secrets
      }
    }
  }
}

async function watch(trees, stdinEnded) {
  const readable = {};
  let passes = 0;
  do {
    for (const tree of trees) readEverything(tree, readable);
    if (++passes === 1) process.stdout.write("watching\n");
    await new Promise((resolve) => setTimeout(resolve, 2));
  } while (!stdinEnded());
  return { passes, readable };
}

let input = "";
let ended = false;
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => (ended = true));
const job = await new Promise((resolve) => {
  const check = setInterval(() => {
    if (!input.includes("\n")) return;
    clearInterval(check);
    resolve(JSON.parse(input.slice(0, input.indexOf("\n"))));
  }, 1);
});
const answer = job.watch
  ? await watch(job.watch.trees, () => ended)
  : {
      login: await Promise.all(
        job.login.passwords.map((password) => login(job.login.port, password)),
      ),
      read: job.read.map(read),
      sockets: await Promise.all(job.sockets.map(socket)),
    };
process.stdout.write(`${JSON.stringify(answer)}\n`);
