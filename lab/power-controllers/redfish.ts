import crypto from "node:crypto";
import https from "node:https";
import type net from "node:net";

import { listenKeepingPort } from "../listen-port";
import type { LabChassis } from "./chassis";

export type LabRedfish = {
  port: number;
  systemId: string;
  /** Tests: the sessions open now (their ids), and every session ever opened or deleted. */
  openSessions(): string[];
  readonly sessionLog: string[];
  stop(): Promise<void>;
};

/**
 * A BMC's Redfish service for one lab node: HTTPS with its own self-signed certificate, basic
 * auth (a wrong user or password: 401 with a Redfish error body), the service root, the systems
 * collection and one DMTF `ComputerSystem` whose `PowerState` is the chassis's, and its
 * `ComputerSystem.Reset` action (`On`, `ForceOn`, `ForceOff`, `GracefulShutdown`; anything else
 * 400 `ActionParameterNotSupported`). While the chassis is unreachable, every connection is
 * cut before TLS.
 *
 * Its SessionService as DSP0266 has it: `POST /redfish/v1/SessionService/Sessions` with
 * `UserName` and `Password` (no other credentials needed) opens a session — 201, the token in
 * `X-Auth-Token`, the session's URI in `Location` — or answers 401 for wrong ones; a request
 * carrying a live `X-Auth-Token` is authenticated by it (an unknown or deleted one: 401);
 * `DELETE` on the session's URI ends it.
 */
export async function startLabRedfish(options: {
  chassis: LabChassis;
  tls: { key: string; cert: string };
  username: string;
  password: string;
  systemId?: string;
}): Promise<LabRedfish> {
  const { chassis } = options;
  const systemId = options.systemId ?? "1";
  const systemPath = `/redfish/v1/Systems/${systemId}`;
  const resetPath = `${systemPath}/Actions/ComputerSystem.Reset`;
  const expected = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString("base64")}`;
  const sockets = new Set<net.Socket>();
  const sessionsPath = "/redfish/v1/SessionService/Sessions";
  /** token → session id */
  const sessions = new Map<string, string>();
  const sessionLog: string[] = [];
  let sessionCounter = 0;

  const send = (res: import("node:http").ServerResponse, status: number, body?: unknown) => {
    const text = body === undefined ? "" : JSON.stringify(body);
    res.writeHead(status, {
      "Content-Type": "application/json",
      "OData-Version": "4.0",
      "Content-Length": Buffer.byteLength(text),
    });
    res.end(text);
  };
  const error = (code: string, message: string) => ({
    error: {
      code: `Base.1.8.${code}`,
      message,
      "@Message.ExtendedInfo": [{ MessageId: `Base.1.8.${code}`, Message: message }],
    },
  });

  const server = https.createServer(
    { key: options.tls.key, cert: options.tls.cert },
    (req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (chunk: string) => {
        if (body.length < 65_536) body += chunk;
      });
      req.on("end", () => {
        const path = (req.url ?? "/").split("?")[0]!.replace(/\/$/, "");
        if (path === "/redfish/v1" && req.method === "GET") {
          // The service root is readable without credentials, as the schema allows.
          return send(res, 200, {
            "@odata.id": "/redfish/v1",
            "@odata.type": "#ServiceRoot.v1_5_0.ServiceRoot",
            Id: "RootService",
            Name: "Lab Root Service",
            RedfishVersion: "1.8.0",
            Systems: { "@odata.id": "/redfish/v1/Systems" },
            SessionService: { "@odata.id": "/redfish/v1/SessionService" },
            Links: { Sessions: { "@odata.id": sessionsPath } },
          });
        }
        if (path === sessionsPath && req.method === "POST") {
          // Creating a session needs no credentials but the ones in the body.
          let login: { UserName?: unknown; Password?: unknown };
          try {
            login = JSON.parse(body) as typeof login;
          } catch {
            return send(res, 400, error("MalformedJSON", "The request body is not JSON."));
          }
          if (login.UserName !== options.username || login.Password !== options.password)
            return send(res, 401, error("NoValidSession", "The credentials are not valid."));
          const id = String(++sessionCounter);
          const token = crypto.randomBytes(24).toString("hex");
          sessions.set(token, id);
          sessionLog.push(`opened ${id}`);
          const uri = `${sessionsPath}/${id}`;
          res.setHeader("X-Auth-Token", token);
          res.setHeader("Location", uri);
          return send(res, 201, {
            "@odata.id": uri,
            "@odata.type": "#Session.v1_3_0.Session",
            Id: id,
            Name: `Session ${id}`,
            UserName: options.username,
          });
        }
        const token = req.headers["x-auth-token"];
        const session = typeof token === "string" ? sessions.get(token) : undefined;
        if (session === undefined && req.headers.authorization !== expected) {
          res.setHeader("WWW-Authenticate", 'Basic realm="lab BMC"');
          return send(res, 401, error("NoValidSession", "The credentials are not valid."));
        }
        if (path.startsWith(`${sessionsPath}/`) && req.method === "DELETE") {
          const id = path.slice(sessionsPath.length + 1);
          const entry = [...sessions.entries()].find(([, s]) => s === id);
          if (!entry)
            return send(res, 404, error("ResourceMissingAtURI", `${path} does not exist.`));
          sessions.delete(entry[0]);
          sessionLog.push(`deleted ${id}`);
          return send(res, 204);
        }
        if (path === "/redfish/v1/Systems" && req.method === "GET") {
          return send(res, 200, {
            "@odata.id": "/redfish/v1/Systems",
            "@odata.type": "#ComputerSystemCollection.ComputerSystemCollection",
            Name: "Computer System Collection",
            "Members@odata.count": 1,
            Members: [{ "@odata.id": systemPath }],
          });
        }
        if (path === systemPath && req.method === "GET") {
          return send(res, 200, {
            "@odata.id": systemPath,
            "@odata.type": "#ComputerSystem.v1_13_0.ComputerSystem",
            Id: systemId,
            Name: chassis.node.name,
            HostName: chassis.node.name,
            SystemType: "Physical",
            PowerState: chassis.isOn() ? "On" : "Off",
            Actions: {
              "#ComputerSystem.Reset": {
                target: resetPath,
                "ResetType@Redfish.AllowableValues": [
                  "On",
                  "ForceOn",
                  "ForceOff",
                  "GracefulShutdown",
                ],
              },
            },
          });
        }
        if (path === resetPath) {
          if (req.method !== "POST")
            return send(res, 405, error("OperationNotAllowed", "Use POST for an action."));
          let type: unknown;
          try {
            type = (JSON.parse(body) as { ResetType?: unknown }).ResetType;
          } catch {
            return send(res, 400, error("MalformedJSON", "The request body is not JSON."));
          }
          if (type === "On" || type === "ForceOn") {
            chassis.requestPowerOn(`redfish ${type}`);
            // A test's moment "right after this power-on was taken" (chassis.afterPowerOnTaken),
            // over before the BMC answers: what the test does then is in place when the console
            // hears back.
            const after = chassis.afterPowerOnTaken;
            if (after) {
              void after().then(
                () => send(res, 204),
                () => send(res, 204),
              );
              return;
            }
            return send(res, 204);
          }
          if (type === "ForceOff" || type === "GracefulShutdown") {
            void chassis.forceOff();
            return send(res, 204);
          }
          return send(
            res,
            400,
            error("ActionParameterNotSupported", `ResetType ${String(type)} is not supported.`),
          );
        }
        return send(res, 404, error("ResourceMissingAtURI", `${path} does not exist.`));
      });
    },
  );
  server.on("connection", (socket: net.Socket) => {
    if (chassis.faults.unreachable) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  const port = await listenKeepingPort(server, 0, "127.0.0.1");
  return {
    port,
    systemId,
    openSessions: () => [...sessions.values()],
    sessionLog,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
