import { expect, test } from "./support/test";
import { startLabCluster, type LabCluster } from "../lab";
import { startLabUps, type LabUps } from "../lab/ups/lab-ups";
import { E2E_STORAGE_STATE } from "./auth-state";
import { addLabHost, addLabUps, expectNoReload, markNoReload, openDialog } from "./support/console";

/*
 * Issue 14's "done when", in the browser: the three nodes of a lab Ceph cluster are onboarded
 * through Add host, protected by a lab UPS and armed; a live drill of the UPS's outage from the
 * power page disarms HA, stops every guest, sets the Ceph flags and takes the nodes down —
 * the node without a Ceph monitor first — drawn live on the run's timeline and kept; Restore
 * brings HA and Ceph back. The spec leaves the console disarmed, its targets and UPS removed.
 */

test.describe.configure({ mode: "serial" });

const CLUSTER = "e2e-ceph";
const UPS = "cluster-drill-ups";
const hostName = (node: string) => `clu-${node}`;
let lab: LabCluster | undefined;
let ups: LabUps | undefined;
let upsId = "";
const targetIds: string[] = [];

test.afterAll(async ({ browser }) => {
  const context = await browser.newContext({ storageState: E2E_STORAGE_STATE });
  const request = context.request;
  await request.post("/api/power/mode", { data: { mode: "dry-run" } });
  for (const id of targetIds) await request.delete(`/api/power/targets/${id}`);
  if (upsId) await request.delete(`/api/power/ups/${upsId}`);
  await context.close();
  await lab?.stop();
  await ups?.stop();
});

test("set-up: the three nodes of a lab Ceph cluster, onboarded through Add host, protected by a lab UPS", async ({
  page,
}) => {
  test.setTimeout(300_000);
  ups = await startLabUps({ name: "cludrillups" });
  lab = await startLabCluster({
    nodes: 3,
    name: CLUSTER,
    ceph: { monitors: ["pve2", "pve3"] },
    guests: ["pve1", "pve2", "pve3"].flatMap((node, i) => [
      { vmid: 200 + i * 10, type: "qemu" as const, node, storage: "ceph" as const, ha: true },
      { vmid: 201 + i * 10, type: "lxc" as const, node, storage: "ceph" as const },
    ]),
    timeScale: 0.01,
    timing: { guestShutdownMs: 300, haDisarmMs: 300, nodeShutdownDelayMs: 500 },
  });
  const hostIds: string[] = [];
  for (const node of lab.nodes) {
    await addLabHost(page, hostName(node.name), node);
    hostIds.push(/\/hosts\/([0-9a-f-]{36})$/.exec(page.url())![1]!);
    await expect(page.getByTestId("state-badge")).toHaveAttribute("data-state", "active", {
      timeout: 120_000,
    });
  }
  upsId = await addLabUps(page, UPS, ups);
  for (const hostId of hostIds) {
    const target = await page.request.post("/api/power/targets", {
      data: { kind: "pve-node", hostId, feeds: [upsId], feedPolicy: "any" },
    });
    expect(target.status(), await target.text()).toBe(201);
    targetIds.push(((await target.json()) as { target: { id: string } }).target.id);
  }

  // The console's discovery sees the three as one hyper-converged cluster.
  await page.goto("/power/clusters");
  await page.getByTestId("clusters-refresh").click();
  const nodes = page.getByTestId(`cluster-nodes-${CLUSTER}`);
  await expect(nodes.locator("tr[data-testid^='cluster-node-']")).toHaveCount(3, {
    timeout: 30_000,
  });
  for (const node of ["pve1", "pve2", "pve3"]) {
    await expect(nodes.getByTestId(`cluster-node-${node}`)).toContainText(hostName(node));
  }

  await page.goto("/power");
  await expect(page.getByTestId(`ups-card-${UPS}`)).toHaveAttribute("data-condition", "on-mains", {
    timeout: 30_000,
  });
});

test("a live drill of the cluster's outage: HA disarmed, every guest stopped, the Ceph flags set and the nodes down non-monitor first, drawn live and kept; Restore brings HA and Ceph back", async ({
  page,
}) => {
  test.setTimeout(180_000);
  await page.goto("/power");
  await openDialog(page, "arm");
  await expect(
    page.getByTestId("arm-dialog").getByTestId(`arm-target-${hostName("pve1")}`),
  ).toBeVisible();
  await page.getByTestId("arm-dialog-confirm").click();
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "armed");

  await page.goto("/power/runs");
  await openDialog(page, "drill");
  const dialog = page.getByTestId("drill-dialog");
  await dialog.getByTestId("drill-ups").selectOption({ label: UPS });
  for (const node of ["pve1", "pve2", "pve3"]) {
    await expect(dialog.getByTestId(`drill-target-${hostName(node)}`)).toBeVisible();
  }
  await dialog.getByTestId("drill-live").check();
  await expect(dialog.getByTestId("drill-live-warning")).toContainText("really shut down");
  await page.getByTestId("drill-dialog-confirm").click();
  await expect(page).toHaveURL(/\/power\/runs\?run=[0-9a-f-]{36}$/);
  const runId = new URL(page.url()).searchParams.get("run")!;
  await markNoReload(page);

  // Live: each bar appears and ends on the open page, in the sequence's order.
  const timeline = page.getByTestId("run-timeline");
  const bar = (lane: string, label: string) =>
    timeline.locator(`[data-lane="${lane}"][data-label="${label}"]`);
  for (const label of ["disarm HA", "stop guests", "set Ceph flags"]) {
    await expect(bar("cluster", label)).toHaveAttribute("data-outcome", "ok", { timeout: 60_000 });
  }
  for (const node of ["pve1", "pve2", "pve3"]) {
    await expect(bar(node, `${node} goes down`)).toHaveAttribute("data-outcome", "ok", {
      timeout: 60_000,
    });
  }
  await expect(timeline).toHaveAttribute("data-run-status", "succeeded", { timeout: 60_000 });
  await expectNoReload(page);

  // The order, from the kept record: HA, guests, flags, then pve1 (no monitor), pve2, pve3.
  const answer = await page.request.get(`/api/power/runs/${runId}`);
  const { actions } = (await answer.json()) as {
    actions: { lane: string; label: string; startedAt: string }[];
  };
  const startOf = (label: string) => Date.parse(actions.find((a) => a.label === label)!.startedAt);
  const order = [
    "disarm HA",
    "stop guests",
    "set Ceph flags",
    "pve1 goes down",
    "pve2 goes down",
    "pve3 goes down",
  ].map(startOf);
  expect(order).toEqual([...order].sort((a, b) => a - b));

  // What the lab saw: HA disarmed, the flags set, no guest running, every node off.
  expect(lab!.model.armedState).toBe("disarmed");
  expect([...lab!.model.ceph!.flags].sort()).toEqual(
    ["nobackfill", "noout", "norebalance", "norecover"].sort(),
  );
  expect([...lab!.model.guests.values()].filter((g) => g.status === "running")).toEqual([]);
  expect(lab!.model.nodes.map((n) => n.online)).toEqual([false, false, false]);

  // Kept: after a reload the timeline is still there.
  await page.reload();
  await expect(bar("pve3", "pve3 goes down")).toHaveAttribute("data-outcome", "ok");

  // Power returns: the nodes come back, Restore re-arms HA and clears the flags, read back.
  for (const node of lab!.nodes) await lab!.powerOn(node.name);
  await page.goto("/power");
  await openDialog(page, "disarm");
  await page.getByTestId("disarm-dialog-confirm").click();
  await expect(page.getByTestId("power-mode")).toHaveAttribute("data-mode", "dry-run");
  await page.getByTestId(`restore-cluster-${CLUSTER}`).click();
  await page.getByTestId("restore-cluster-dialog-confirm").click();
  const report = page.getByTestId(`restore-report-${CLUSTER}`);
  await expect(report).toContainText("restored", { timeout: 30_000 });
  await expect(report).not.toContainText("NOT restored");
  expect(lab!.model.armedState).toBe("armed");
  expect(lab!.model.ceph!.flags.size).toBe(0);
});
