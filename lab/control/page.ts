import type { ControlClusterState, ControlPbsState } from "./cluster";
import type { SwitchState } from "./switches";

/** The cluster's or the backup server's state with its switches and actions. */
export type PartState<S> = {
  state: S;
  switches: SwitchState[];
  actions: Array<{ name: string; description: string }>;
};

/** What the control API reports for one node (GET /api/nodes). */
export type ControlNodeState = {
  name: string;
  root: string;
  ssh: { host: string; port: number; username: string; password: string; hostKeySha256: string };
  api?: { url: string; certSha256: string };
  /** up, down, rebooting… (absent: the lab does not say). */
  power?: string;
  /** Every `POST …/status command=shutdown` the node received; status 0: not answered (yet). */
  shutdownRequests: Array<{ at: string; status: number; authid: string | null }>;
  switches: SwitchState[];
  actions: Array<{ name: string; description: string }>;
};

/** What the control API reports for one lab UPS (GET /api/ups). */
export type ControlUpsState = {
  name: string;
  endpoints: Record<string, unknown>;
  power: Record<string, unknown>;
  switches: SwitchState[];
  actions: Array<{ name: string; description: string }>;
};

/** Escapes text for HTML element content and double-quoted attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value)
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

/**
 * The control page: plain HTML rendered on the server (every value escaped), a few lines of
 * script that send a change to the JSON API and reload. No framework, no external assets.
 */
export function renderControlPage(
  nodes: readonly ControlNodeState[],
  ups: readonly ControlUpsState[] = [],
  parts: {
    cluster?: PartState<ControlClusterState> | null;
    pbs?: PartState<ControlPbsState> | null;
  } = {},
): string {
  const e = escapeHtml;
  const body =
    (parts.cluster ? `${renderCluster(parts.cluster)}\n` : "") +
    (nodes.length === 0
      ? parts.cluster
        ? ""
        : "<p>No nodes.</p>"
      : nodes.map(renderNode).join("\n")) +
    ups.map((device) => `\n${renderUps(device)}`).join("") +
    (parts.pbs ? `\n${renderPbs(parts.pbs)}` : "");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>CluPilot lab</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem; color: #1b1f24; }
  h1 { font-size: 1.3rem; } h2 { font-size: 1.1rem; margin: 0 0 .5rem; }
  section { border: 1px solid #d0d7de; border-radius: 6px; padding: 1rem; margin-bottom: 1rem; }
  table { border-collapse: collapse; width: 100%; }
  td { padding: .3rem .5rem; border-top: 1px solid #eaeef2; vertical-align: top; }
  code { font-size: 12px; background: #f6f8fa; padding: 0 .2rem; }
  .desc { color: #57606a; } #error { color: #b42318; white-space: pre-wrap; }
  input[type=number] { width: 8rem; }
</style>
</head>
<body>
<h1>CluPilot lab — ${e(nodes.length)} node${nodes.length === 1 ? "" : "s"}</h1>
<p id="error" role="alert"></p>
${body}
<script>
(() => {
  const error = document.getElementById("error");
  async function send(method, url, body) {
    error.textContent = "";
    const response = await fetch(url, {
      method,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body ?? {}),
    });
    if (!response.ok) {
      error.textContent = response.status + " " + (await response.text());
      return;
    }
    location.reload();
  }
  const nodeUrl = (el) => {
    const section = el.closest("section");
    if (section.dataset.cluster !== undefined) return "/api/cluster";
    if (section.dataset.pbs !== undefined) return "/api/pbs";
    return section.dataset.ups !== undefined
      ? "/api/ups/" + encodeURIComponent(section.dataset.ups)
      : "/api/nodes/" + encodeURIComponent(section.dataset.node);
  };
  // A UPS's power changes by itself (the battery drains): its line is refreshed every 2 s.
  for (const line of document.querySelectorAll("[data-ups-power]")) {
    const url = "/api/ups/" + encodeURIComponent(line.closest("section").dataset.ups);
    setInterval(async () => {
      try {
        const response = await fetch(url);
        if (response.ok) line.textContent = JSON.stringify((await response.json()).power);
      } catch {}
    }, 2000);
  }
  document.addEventListener("change", (event) => {
    const el = event.target;
    if (!el.dataset || !el.dataset.switch) return;
    let value;
    if (el.type === "checkbox") value = el.checked;
    else if (el.type === "number") value = el.value === "" ? null : Number(el.value);
    else if (el.dataset.json !== undefined) {
      try { value = JSON.parse(el.value); } catch (e) { error.textContent = "invalid JSON: " + e.message; return; }
    } else value = el.value;
    void send("PUT", nodeUrl(el) + "/faults", { [el.dataset.switch]: value });
  });
  document.addEventListener("click", (event) => {
    const el = event.target;
    if (!el.dataset || !el.dataset.action) return;
    void send("POST", nodeUrl(el) + "/actions/" + encodeURIComponent(el.dataset.action));
  });
})();
</script>
</body>
</html>
`;
}

function renderNode(node: ControlNodeState): string {
  const e = escapeHtml;
  const api =
    node.api === undefined
      ? ""
      : `<div>API <code>${e(node.api.url)}</code> certificate <code>${e(node.api.certSha256)}</code></div>`;
  return `<section data-node="${e(node.name)}">
<h2>${e(node.name)}</h2>
<div>SSH <code>${e(node.ssh.username)}@${e(node.ssh.host)}:${e(node.ssh.port)}</code> password <code>${e(node.ssh.password)}</code> host key <code>${e(node.ssh.hostKeySha256)}</code></div>
${api}
<div>${node.power === undefined ? "" : `power <b>${e(node.power)}</b> · `}${e(node.shutdownRequests.length)} shutdown request(s) received</div>
<div class="desc">root <code>${e(node.root)}</code></div>
<table>
${renderRows(node.switches, node.actions)}
</table>
</section>`;
}

const yes = (value: boolean, on: string, off: string) => (value ? on : off);
const gib = (bytes: number) => (bytes / 1024 ** 3).toFixed(1);

function renderCluster({ state: c, switches, actions }: PartState<ControlClusterState>): string {
  const e = escapeHtml;
  const nodes = c.nodes
    .map(
      (n) =>
        `<tr data-cluster-node="${e(n.name)}"><td><code>${e(n.name)}</code> ${e(n.ip)}</td>` +
        `<td>${yes(n.online, "✓ up", "✕ down")}</td>` +
        `<td>memory ${e(gib(n.memory.used))} of ${e(gib(n.memory.total))} GiB</td>` +
        `<td>API <code>${e(n.api.url)}</code> certificate <code>${e(n.api.certSha256)}</code></td></tr>`,
    )
    .join("\n");
  const guests = c.guests
    .map(
      (g) =>
        `<tr data-guest="${e(g.vmid)}"><td><code>${e(g.vmid)}</code> ${e(g.type === "qemu" ? "VM" : "CT")} ${e(g.name)}</td>` +
        `<td>${e(g.node)}${g.migratingTo ? ` → ${e(g.migratingTo)} (migrating)` : ""}</td><td>${e(g.status)}${g.frozen ? " — frozen on I/O" : ""}</td>` +
        `<td>${g.ha ? "HA" : ""}</td><td>${e(g.storage)}</td><td>${e(gib(g.memoryBytes))} GiB</td><td>shutdown ${e(g.shutdownMs)} ms</td></tr>`,
    )
    .join("\n");
  const ceph =
    c.ceph === null
      ? "<div>Ceph: not installed</div>"
      : `<div data-ceph>Ceph: flags <code>${e(c.ceph.flags.join(",") || "none")}</code>, monitors ${e(c.ceph.monitors.join(", "))}, ${e(c.ceph.osdsPerNode)} OSDs per node, pools ${e(c.ceph.pools.map((p) => `${p.name} size ${p.size} min_size ${p.minSize}`).join("; "))}${c.ceph.blocked ? " — <strong>I/O blocked (below min_size)</strong>" : ""}</div>`;
  return `<section data-cluster="${e(c.name)}">
<h2>Cluster ${e(c.name)} (Proxmox VE ${e(c.pveVersion)})</h2>
<div data-quorum>${yes(c.quorate, "✓ quorate", "✕ no quorum")} · HA <code data-ha>${e(c.ha.armedState)}</code>${c.ha.resourceMode === null ? "" : ` (resource-mode ${e(c.ha.resourceMode)})`}</div>
${ceph}
<table>
${nodes}
</table>
<h3>Guests</h3>
<table>
${guests}
</table>
<h3>Faults and power</h3>
<table>
${renderRows(switches, actions)}
</table>
</section>`;
}

function renderPbs({ state: p, switches, actions }: PartState<ControlPbsState>): string {
  const e = escapeHtml;
  return `<section data-pbs="${e(p.name)}">
<h2>Proxmox Backup Server ${e(p.name)}: <span data-pbs-state>${e(p.state)}</span></h2>
<div>API <code>${e(p.url)}</code> certificate <code>${e(p.certSha256)}</code></div>
<div>token <code>${e(p.token.id)}</code> secret <code>${e(p.token.secret)}</code></div>
<div class="desc">${e(p.requests)} requests answered</div>
<table>
${renderRows(switches, actions)}
</table>
</section>`;
}

function renderUps(ups: ControlUpsState): string {
  const e = escapeHtml;
  return `<section data-ups="${e(ups.name)}">
<h2>UPS ${e(ups.name)}</h2>
<div>Power <code data-ups-power>${e(JSON.stringify(ups.power))}</code></div>
<div class="desc">endpoints <code>${e(JSON.stringify(ups.endpoints))}</code></div>
<table>
${renderRows(ups.switches, ups.actions)}
</table>
</section>`;
}

function renderRows(
  switches: readonly SwitchState[],
  actions: ReadonlyArray<{ name: string; description: string }>,
): string {
  const e = escapeHtml;
  return [
    ...switches.map(
      (s) =>
        `<tr><td><label><code>${e(s.name)}</code></label></td><td>${renderInput(s)}</td>` +
        `<td class="desc">${e(s.description)}</td></tr>`,
    ),
    ...actions.map(
      (a) =>
        `<tr><td><code>${e(a.name)}</code></td><td><button type="button" data-action="${e(a.name)}">Run</button></td>` +
        `<td class="desc">${e(a.description)}</td></tr>`,
    ),
  ].join("\n");
}

function renderInput(s: SwitchState): string {
  const e = escapeHtml;
  const name = e(s.name);
  switch (s.input.type) {
    case "boolean":
      return `<input type="checkbox" data-switch="${name}"${s.value === true ? " checked" : ""}>`;
    case "number": {
      const { min, max, unit } = s.input;
      return (
        `<input type="number" data-switch="${name}" value="${s.value === null ? "" : e(s.value)}"` +
        `${min === undefined ? "" : ` min="${e(min)}"`}${max === undefined ? "" : ` max="${e(max)}"`}>` +
        (unit === undefined ? "" : ` ${e(unit)}`)
      );
    }
    case "choice":
      return `<select data-switch="${name}">${s.input.options
        .map(
          (option) =>
            `<option value="${e(option)}"${option === s.value ? " selected" : ""}>${e(option)}</option>`,
        )
        .join("")}</select>`;
    case "json":
      return `<textarea data-switch="${name}" data-json rows="2" cols="40">${e(JSON.stringify(s.value))}</textarea>`;
  }
}
