import type { SwitchState } from "./switches";

/** What the control API reports for one node (GET /api/nodes). */
export type ControlNodeState = {
  name: string;
  root: string;
  ssh: { host: string; port: number; username: string; password: string; hostKeySha256: string };
  api?: { url: string; certSha256: string };
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
): string {
  const e = escapeHtml;
  const body =
    (nodes.length === 0 ? "<p>No nodes.</p>" : nodes.map(renderNode).join("\n")) +
    ups.map((device) => `\n${renderUps(device)}`).join("");
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
<div class="desc">root <code>${e(node.root)}</code></div>
<table>
${renderRows(node.switches, node.actions)}
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
