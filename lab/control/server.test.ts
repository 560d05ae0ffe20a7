import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { controlUps, startLabUps, type LabUps } from "../ups/lab-ups";
import { escapeHtml } from "./page";
import { startControlServer, type ControlNode, type ControlServer } from "./server";
import { SwitchRegistry, choiceSwitch, registerSshSwitches } from "./switches";

function fakeNode(name: string) {
  const ssh = {
    faults: {
      refuseConnections: false,
      dropAfterMs: null as number | null,
      refusePasswords: false,
      refusePublicKeys: [] as string[],
    },
    rotations: 0,
    async rotateHostKey() {
      ssh.rotations += 1;
      return "SHA256:new";
    },
    async restart() {},
  };
  let mode: "ok" | "slow" | "down" = "ok";
  const switches = registerSshSwitches(new SwitchRegistry(), ssh).register(
    choiceSwitch({
      name: "api.mode",
      description: 'Answers "<b>slow</b>" & co.',
      options: ["ok", "slow", "down"] as const,
      get: () => mode,
      set: (value) => {
        mode = value;
      },
    }),
  );
  const node: ControlNode = {
    name,
    root: `/tmp/${name}`,
    ssh: {
      host: "127.0.0.1",
      port: 2222,
      username: "root",
      password: "pw",
      hostKeySha256: "SHA256:abc",
    },
    switches,
  };
  return { node, ssh, mode: () => mode };
}

describe("lab control server", () => {
  const plain = fakeNode("pve1");
  const nasty = fakeNode(`<script>alert("x")</script>&'`);
  let control: ControlServer;

  const put = (name: string, body: string, type = "application/json") =>
    fetch(`${control.url}/api/nodes/${encodeURIComponent(name)}/faults`, {
      method: "PUT",
      headers: { "content-type": type },
      body,
    });

  beforeAll(async () => {
    control = await startControlServer({ nodes: () => [plain.node, nasty.node] });
  });
  afterAll(async () => {
    await control?.stop();
  });

  it("lists every node with its switches, values and actions", async () => {
    const response = await fetch(`${control.url}/api/nodes`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { nodes: Array<Record<string, unknown>> };
    expect(body.nodes.map((n) => n.name)).toEqual(["pve1", nasty.node.name]);
    expect(body.nodes[0]).toMatchObject({
      ssh: { host: "127.0.0.1", port: 2222, username: "root", hostKeySha256: "SHA256:abc" },
      switches: [
        { name: "ssh.refuseConnections", value: false, input: { type: "boolean" } },
        { name: "ssh.dropAfterMs", value: null, input: { type: "number", nullable: true } },
        { name: "ssh.refusePasswords", value: false, input: { type: "boolean" } },
        { name: "ssh.refusePublicKeys", value: [], input: { type: "json" } },
        { name: "api.mode", value: "ok", input: { type: "choice" } },
      ],
      actions: [{ name: "ssh.rotateHostKey" }, { name: "ssh.restart" }],
    });
  });

  it("flips switches and runs actions", async () => {
    const response = await put(
      "pve1",
      JSON.stringify({ "ssh.refuseConnections": true, "ssh.dropAfterMs": 250, "api.mode": "slow" }),
    );
    expect(response.status).toBe(200);
    expect(plain.ssh.faults).toEqual({
      refuseConnections: true,
      dropAfterMs: 250,
      refusePasswords: false,
      refusePublicKeys: [],
    });
    const refused = `SHA256:${"A".repeat(43)}`;
    expect((await put("pve1", JSON.stringify({ "ssh.refusePublicKeys": [refused] }))).status).toBe(
      200,
    );
    expect(plain.ssh.faults.refusePublicKeys).toEqual([refused]);
    expect(plain.mode()).toBe("slow");
    expect(nasty.ssh.faults.refuseConnections).toBe(false);
    expect((await put("pve1", JSON.stringify({ "ssh.dropAfterMs": null }))).status).toBe(200);
    expect(plain.ssh.faults.dropAfterMs).toBeNull();

    const action = await fetch(`${control.url}/api/nodes/pve1/actions/ssh.rotateHostKey`, {
      method: "POST",
      headers: { "content-type": "application/json" },
    });
    expect(action.status).toBe(200);
    expect(plain.ssh.rotations).toBe(1);
  });

  it("rejects invalid bodies with 400 and field errors, changing nothing", async () => {
    plain.ssh.faults.refuseConnections = false;
    const cases: Array<[string, string | null]> = [
      ["{not json", null],
      ["[1,2]", null],
      ['"text"', null],
      ["{}", null],
      ['{"ssh.refuseConnections":"yes"}', "ssh.refuseConnections"],
      ['{"ssh.dropAfterMs":-5}', "ssh.dropAfterMs"],
      ['{"ssh.dropAfterMs":1.5}', "ssh.dropAfterMs"],
      ['{"api.mode":"sideways"}', "api.mode"],
      ['{"ssh.refusePublicKeys":["MD5:ab"]}', "ssh.refusePublicKeys"],
      ['{"ssh.refuseConnections":true,"ssh.noSuchSwitch":1}', "ssh.noSuchSwitch"],
    ];
    for (const [body, field] of cases) {
      const response = await put("pve1", body);
      expect(response.status, body).toBe(400);
      const answer = (await response.json()) as { fieldErrors: Record<string, string[]> };
      if (field !== null) expect(Object.keys(answer.fieldErrors), body).toEqual([field]);
    }
    // The valid half of a partly invalid body was not applied either.
    expect(plain.ssh.faults.refuseConnections).toBe(false);
  });

  it("answers 404 for unknown nodes and actions, 405 for wrong methods, 415 without JSON", async () => {
    expect((await put("pve9", "{}")).status).toBe(404);
    expect(
      (
        await fetch(`${control.url}/api/nodes/pve1/actions/ssh.nope`, {
          method: "POST",
          headers: { "content-type": "application/json" },
        })
      ).status,
    ).toBe(404);
    expect((await fetch(`${control.url}/api/nodes/pve1/faults`)).status).toBe(405);
    expect((await put("pve1", '{"ssh.refuseConnections":true}', "text/plain")).status).toBe(415);
    expect(plain.ssh.faults.refuseConnections).toBe(false);
  });

  it("refuses requests for another Host (DNS rebinding)", async () => {
    const http = await import("node:http");
    const status = await new Promise<number>((resolve, reject) => {
      const request = http.request(
        `${control.url}/api/nodes`,
        { headers: { host: "evil.example:80" } },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on("error", reject);
      request.end();
    });
    expect(status).toBe(403);
  });

  it("serves a page that escapes node names and descriptions", async () => {
    const response = await fetch(control.url);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/html");
    const html = await response.text();
    expect(html).not.toContain('<script>alert("x")</script>');
    expect(html).toContain(escapeHtml(nasty.node.name));
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;");
    expect(html).toContain("&quot;&lt;b&gt;slow&lt;/b&gt;&quot; &amp; co.");
    expect(html).toContain('data-switch="ssh.refuseConnections"');
    // Exactly one script element: the page's own.
    expect(html.match(/<script>/g)?.length).toBe(1);
  });

  it("accepts names with URL-special characters in paths", async () => {
    const response = await fetch(`${control.url}/api/nodes/${encodeURIComponent(nasty.node.name)}`);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { name: string }).name).toBe(nasty.node.name);
  });
});

describe("lab control server with a lab UPS", () => {
  let control: ControlServer;
  let ups: LabUps;

  beforeAll(async () => {
    // The faces stay off: the control API drives the power timeline itself.
    ups = await startLabUps({ name: "lab-ups.1", nut: false, snmp: false });
    control = await startControlServer({ nodes: () => [], ups: () => [controlUps(ups)] });
  });
  afterAll(async () => {
    await control?.stop();
    await ups?.stop();
  });

  const upsUrl = () => `${control.url}/api/ups/${encodeURIComponent("lab-ups.1")}`;
  const json = { "content-type": "application/json" };

  it("lists the UPS with its power, switches and actions", async () => {
    const body = (await (await fetch(`${control.url}/api/ups`)).json()) as {
      ups: Array<Record<string, unknown>>;
    };
    expect(body.ups).toHaveLength(1);
    expect(body.ups[0]).toMatchObject({
      name: "lab-ups.1",
      power: { status: "OL", mains: true, chargePercent: 100, lowBattery: false },
      actions: expect.arrayContaining([expect.objectContaining({ name: "ups.pullPlug" })]),
    });
  });

  it("pulls the plug with a switch and jumps to low battery with an action", async () => {
    const flipped = await fetch(`${upsUrl()}/faults`, {
      method: "PUT",
      headers: json,
      body: JSON.stringify({ "ups.mains": false, "ups.hold": true }),
    });
    expect(flipped.status).toBe(200);
    expect(((await flipped.json()) as { power: object }).power).toMatchObject({
      mains: false,
      status: "OB DISCHRG",
    });
    const jumped = await fetch(`${upsUrl()}/actions/ups.jumpToLowBattery`, {
      method: "POST",
      headers: json,
    });
    expect(((await jumped.json()) as { power: object }).power).toMatchObject({
      lowBattery: true,
      status: "OB DISCHRG LB",
    });
  });

  it("refuses invalid values (nothing changes) and unknown UPS or actions", async () => {
    const before = ups.control.snapshot().lowBatteryPercent;
    const invalid = await fetch(`${upsUrl()}/faults`, {
      method: "PUT",
      headers: json,
      body: JSON.stringify({ "ups.lowBatteryPercent": 50, "ups.nutDriver": "broken" }),
    });
    expect(invalid.status).toBe(400);
    expect(ups.control.snapshot().lowBatteryPercent).toBe(before);
    expect((await fetch(`${control.url}/api/ups/nosuch`)).status).toBe(404);
    const noAction = await fetch(`${upsUrl()}/actions/ups.explode`, {
      method: "POST",
      headers: json,
    });
    expect(noAction.status).toBe(404);
  });

  it("shows the UPS, its power and its switches on the page", async () => {
    ups.control.set({ held: true });
    ups.control.jumpToLowBattery();
    const page = await (await fetch(control.url)).text();
    expect(page).toContain('<section data-ups="lab-ups.1">');
    expect(page).toContain(escapeHtml('"status":"OB DISCHRG LB"'));
    expect(page).toContain('data-switch="ups.mains"');
    expect(page).toContain('data-action="ups.pullPlug"');
  });
});
