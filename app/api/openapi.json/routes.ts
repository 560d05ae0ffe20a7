/*
 * Every route module of the JSON API, for its document (./route.ts). The document's test
 * (./openapi.test.ts) walks app/api and fails for a route file missing here.
 */
import * as audit from "../audit/route";
import * as catalogPlansPlanIdVersions from "../catalog/plans/[planId]/versions/route";
import * as catalogPlans from "../catalog/plans/route";
import * as catalog from "../catalog/route";
import * as catalogVersionsVersionIdPublish from "../catalog/versions/[versionId]/publish/route";
import * as consoleKeyRotate from "../console-key/rotate/route";
import * as consoleKeyRotationsRotationId from "../console-key/rotations/[rotationId]/route";
import * as consoleKey from "../console-key/route";
import * as crashLoops from "../crash-loops/route";
import * as hostsHostIdClearPin from "../hosts/[hostId]/clear-pin/route";
import * as hostsHostIdDecommission from "../hosts/[hostId]/decommission/route";
import * as hostsHostIdPowerController from "../hosts/[hostId]/power-controller/route";
import * as hostsHostIdPowerControllerBmcReport from "../hosts/[hostId]/power-controller/bmc-report/route";
import * as hostsHostIdPowerControllerPowerOn from "../hosts/[hostId]/power-controller/power-on/route";
import * as hostsHostId from "../hosts/[hostId]/route";
import * as hostsHostIdRuns from "../hosts/[hostId]/runs/route";
import * as hostsHostIdTestConnection from "../hosts/[hostId]/test-connection/route";
import * as hosts from "../hosts/route";
import * as live from "../live/route";
import * as notificationsFailing from "../notifications/failing/route";
import * as notificationsTargetsTargetIdAcknowledge from "../notifications/targets/[targetId]/acknowledge/route";
import * as notificationsTargetsTargetId from "../notifications/targets/[targetId]/route";
import * as notificationsTargetsTargetIdTest from "../notifications/targets/[targetId]/test/route";
import * as notificationsTargets from "../notifications/targets/route";
import * as powerClustersClusterId from "../power/clusters/[clusterId]/route";
import * as powerClustersRefresh from "../power/clusters/refresh/route";
import * as powerClusters from "../power/clusters/route";
import * as powerDrillsRunIdWayBack from "../power/drills/[runId]/way-back/route";
import * as powerDrills from "../power/drills/route";
import * as powerEventsEventIdAcknowledge from "../power/events/[eventId]/acknowledge/route";
import * as powerEvents from "../power/events/route";
import * as powerMode from "../power/mode/route";
import * as powerPlan from "../power/plan/route";
import * as powerPowerBack from "../power/power-back/route";
import * as powerReadings from "../power/readings/route";
import * as powerRestore from "../power/restore/route";
import * as power from "../power/route";
import * as powerRunsRunId from "../power/runs/[runId]/route";
import * as powerRuns from "../power/runs/route";
import * as powerSelfTest from "../power/self-test/route";
import * as powerSettings from "../power/settings/route";
import * as powerShed from "../power/shed/route";
import * as powerShutdownRun from "../power/shutdown-run/route";
import * as powerTargetsTargetIdPowerController from "../power/targets/[targetId]/power-controller/route";
import * as powerTargetsTargetIdPowerControllerPowerOn from "../power/targets/[targetId]/power-controller/power-on/route";
import * as powerTargetsTargetId from "../power/targets/[targetId]/route";
import * as powerTargets from "../power/targets/route";
import * as powerUpsUpsIdReleaseLatch from "../power/ups/[upsId]/release-latch/route";
import * as powerUpsUpsId from "../power/ups/[upsId]/route";
import * as powerUps from "../power/ups/route";
import * as runsRunIdAbort from "../runs/[runId]/abort/route";
import * as runsRunIdLog from "../runs/[runId]/log/route";
import * as runsRunIdLogStream from "../runs/[runId]/log/stream/route";
import * as runsRunIdRetry from "../runs/[runId]/retry/route";
import * as runsRunId from "../runs/[runId]/route";
import * as tokensTokenId from "../tokens/[tokenId]/route";
import * as tokens from "../tokens/route";
import * as usersUserId from "../users/[userId]/route";
import * as users from "../users/route";

export const API_ROUTE_MODULES: readonly Record<string, unknown>[] = [
  audit,
  catalogPlansPlanIdVersions,
  catalogPlans,
  catalog,
  catalogVersionsVersionIdPublish,
  consoleKeyRotate,
  consoleKeyRotationsRotationId,
  consoleKey,
  crashLoops,
  hostsHostIdClearPin,
  hostsHostIdDecommission,
  hostsHostIdPowerController,
  hostsHostIdPowerControllerBmcReport,
  hostsHostIdPowerControllerPowerOn,
  hostsHostId,
  hostsHostIdRuns,
  hostsHostIdTestConnection,
  hosts,
  live,
  notificationsFailing,
  notificationsTargetsTargetIdAcknowledge,
  notificationsTargetsTargetId,
  notificationsTargetsTargetIdTest,
  notificationsTargets,
  powerClustersClusterId,
  powerClustersRefresh,
  powerClusters,
  powerDrillsRunIdWayBack,
  powerDrills,
  powerEventsEventIdAcknowledge,
  powerEvents,
  powerMode,
  powerPlan,
  powerPowerBack,
  powerReadings,
  powerRestore,
  power,
  powerRunsRunId,
  powerRuns,
  powerSelfTest,
  powerSettings,
  powerShed,
  powerShutdownRun,
  powerTargetsTargetIdPowerController,
  powerTargetsTargetIdPowerControllerPowerOn,
  powerTargetsTargetId,
  powerTargets,
  powerUpsUpsIdReleaseLatch,
  powerUpsUpsId,
  powerUps,
  runsRunIdAbort,
  runsRunIdLog,
  runsRunIdLogStream,
  runsRunIdRetry,
  runsRunId,
  tokensTokenId,
  tokens,
  usersUserId,
  users,
];
