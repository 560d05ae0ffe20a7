import dgram from "node:dgram";

import snmp from "net-snmp";

import { UPS_MIB, type UpsMibObject } from "@/lib/power/ups/snmp/ups-mib";

/**
 * The lab's SNMP face: net-snmp's agent on 127.0.0.1 (UDP) serving the UPS-MIB (RFC 1628)
 * objects from live values, to v1/v2c communities and SNMPv3 users (authPriv).
 *
 * Two corrections make it answer as real agents do (checked against Debian's snmpd in the
 * parity test):
 * - net-snmp 3.29's agent answers an SNMPv1 GET for a missing object with a v2-only
 *   "noSuchObject" value; a v1 agent must fail the whole request with noSuchName and the
 *   index of the object (RFC 3584 section 4.2.1), which is what makes v1 clients fall back.
 * - "unreachable" drops requests unanswered (UDP has no refusal a client could see).
 *
 * One difference remains, on purpose small: an SNMPv3 request with a wrong authentication key
 * gets no answer from net-snmp's agent, where snmpd reports usmStatsWrongDigests. Either way
 * the console has no reading; only the reason it shows differs ("did not answer" vs "refused").
 */

export type LabSnmpV3User = {
  user: string;
  authProtocol: "md5" | "sha" | "sha256" | "sha512";
  authKey: string;
  privProtocol: "des" | "aes" | "aes256b" | "aes256r";
  privKey: string;
};

/** The integer value of each served object now; objects left out are not served. */
export type LabUpsMibValues = Partial<Record<UpsMibObject, number | string>>;

export type LabSnmpAgentOptions = {
  communities: readonly string[];
  v3Users: readonly LabSnmpV3User[];
  values: () => LabUpsMibValues;
  /** Default: a random free port on 127.0.0.1. */
  port?: number;
};

type NetSnmpAgent = {
  getAuthorizer(): {
    addCommunity(community: string): void;
    addUser(user: snmp.User): void;
  };
  registerProvider(provider: object): void;
  getMib(): { setScalarValue(name: string, value: unknown): void };
  sendResponse(socket: unknown, rinfo: unknown, request: SnmpMessage, response: SnmpPdu): void;
  close(callback?: () => void): void;
};
type SnmpVarbind = { oid: string; type: number; value: unknown };
type SnmpPdu = { errorStatus: number; errorIndex: number; varbinds: SnmpVarbind[] };
type SnmpMessage = { version: number; pdu: SnmpPdu & { type: number } };

export class LabSnmpAgent {
  /** Drop every request unanswered (a UPS card that has gone away). */
  silent = false;
  /** Requests received (answered or dropped). */
  requests = 0;

  private constructor(
    private readonly agent: NetSnmpAgent,
    readonly port: number,
  ) {}

  static async start(options: LabSnmpAgentOptions): Promise<LabSnmpAgent> {
    let socket: dgram.Socket | null = null;
    let self: LabSnmpAgent | null = null;
    const dgramModule = {
      createSocket(type: dgram.SocketType) {
        const created = dgram.createSocket(type);
        socket = created;
        const on = created.on.bind(created);
        // The agent's listener reads through here: count, and drop while silent.
        created.on = ((event: string, listener: (...args: unknown[]) => void) =>
          event === "message"
            ? on("message", (...args: unknown[]) => {
                if (self !== null) self.requests += 1;
                if (self?.silent !== true) listener(...args);
              })
            : on(event, listener)) as typeof created.on;
        return created;
      },
    };
    // net-snmp reads port 0 as "the default, 161": pick a free one first.
    const port = options.port ?? (await freeUdpPort());
    const agent = snmp.createAgent(
      { port, address: "127.0.0.1", transport: "udp4", dgramModule },
      () => {
        // Authorisation failures and undecodable packets: a real agent ignores them too.
      },
    ) as NetSnmpAgent;
    const bound = socket as dgram.Socket | null;
    if (bound === null) throw new Error("lab: the SNMP agent opened no socket");
    await new Promise<void>((resolve, reject) => {
      bound.once("listening", () => resolve());
      bound.once("error", reject);
    });
    self = new LabSnmpAgent(agent, bound.address().port);

    const authorizer = agent.getAuthorizer();
    for (const community of options.communities) authorizer.addCommunity(community);
    for (const user of options.v3Users) {
      authorizer.addUser({
        name: user.user,
        level: snmp.SecurityLevel.authPriv,
        authProtocol: snmp.AuthProtocols[user.authProtocol],
        authKey: user.authKey,
        privProtocol: snmp.PrivProtocols[user.privProtocol],
        privKey: user.privKey,
      });
    }
    registerUpsMib(agent, options.values);
    answerV1AsV1(agent);
    return self;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.agent.close(() => resolve()));
  }
}

/** A UDP port on 127.0.0.1 that was free a moment ago. */
export function freeUdpPort(): Promise<number> {
  const probe = dgram.createSocket("udp4");
  return new Promise((resolve, reject) => {
    probe.once("error", reject);
    probe.bind(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

function registerUpsMib(agent: NetSnmpAgent, values: () => LabUpsMibValues): void {
  const mib = agent.getMib();
  for (const [name, oid] of Object.entries(UPS_MIB) as Array<[UpsMibObject, string]>) {
    const isText = name === "upsIdentManufacturer" || name === "upsIdentModel";
    agent.registerProvider({
      name,
      type: snmp.MibProviderType.Scalar,
      oid: oid.replace(/\.0$/, ""),
      scalarType: isText ? snmp.ObjectType.OctetString : snmp.ObjectType.Integer,
      maxAccess: snmp.MaxAccess["read-only"],
      handler(request: { instanceNode: { value: unknown }; done(error?: object): void }) {
        const value = values()[name];
        if (value === undefined) {
          // An object this card does not have (the stored value stays, so it can come back).
          request.done({
            errorStatus: snmp.ErrorStatus.NoError,
            type: snmp.ObjectType.NoSuchInstance,
            value: null,
          });
          return;
        }
        request.instanceNode.value = value;
        request.done();
      },
    });
    // The instance node must exist for a GET to reach the handler.
    mib.setScalarValue(name, isText ? "" : 0);
  }
}

/** SNMPv2 exception values, which SNMPv1 does not have. */
const EXCEPTIONS: ReadonlySet<number> = new Set([
  snmp.ObjectType.NoSuchObject,
  snmp.ObjectType.NoSuchInstance,
  snmp.ObjectType.EndOfMibView,
]);

function answerV1AsV1(agent: NetSnmpAgent): void {
  const send = agent.sendResponse.bind(agent);
  agent.sendResponse = (socket, rinfo, request, response) => {
    // A PDU nothing went wrong with may carry no error status at all yet.
    if (request.version === snmp.Version1 && !response.errorStatus) {
      const missing = response.varbinds.findIndex((varbind) => EXCEPTIONS.has(varbind.type));
      if (missing >= 0) {
        response.errorStatus = snmp.ErrorStatus.NoSuchName;
        response.errorIndex = missing + 1;
        // A v1 error response carries the request's variable bindings unchanged.
        response.varbinds = request.pdu.varbinds.map((varbind) => ({
          oid: varbind.oid,
          type: snmp.ObjectType.Null,
          value: null,
        }));
      }
    }
    send(socket, rinfo, request, response);
  };
}
