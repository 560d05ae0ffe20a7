import { sql } from "drizzle-orm";
import type { Database } from "@/lib/db/client";
import {
  templateCheckState,
  type TemplateCheckState,
} from "@/lib/steps/onboarding/verify-vm-template";
import { hostStateOf } from "./host-state";
import {
  attentionReasons,
  operatorActedSinceSql,
  stalledSql,
  type AttentionReason,
} from "./needs-attention";

export type RunSummary = {
  id: string;
  status: "running" | "succeeded" | "failed";
  currentStep: string;
  phase: string | null;
  stepStartedAt: string;
  failureReason: string | null;
  failedStep: string | null;
  createdAt: string;
  finishedAt: string | null;
};

export type HostSummary = {
  id: string;
  name: string;
  address: string;
  sshPort: number;
  sshUser: string;
  authMethod: "password" | "private_key" | "console_key";
  hostKeySha256: string | null;
  state: ReturnType<typeof hostStateOf>;
  /** When the decommission pipeline retired the host; null while it is in service. */
  retiredAt: string | null;
  run: RunSummary | null;
  /** When its latest run last changed (the host row's own update time before any run). */
  lastActivityAt: string;
  /** Its running run's next tick is overdue (lib/hosts/needs-attention.ts). */
  stalled: boolean;
  /** An operator acted on the host after its latest run ended (an aborted run is then handled). */
  actedSinceRun: boolean;
  /** Why an operator should look at it; empty when nothing is wrong. */
  attention: AttentionReason[];
  /**
   * The periodic pre-sale VmTemplateCheck (worker/tasks/vm-template-check.ts): `failure` names
   * missing templates, or says the host could not be checked; null when it carries them all.
   */
  templateCheck: { state: TemplateCheckState; failure: string | null; checkedAt: string | null };
  /** What onboarding found and pinned (null until the step that records it has run). */
  proxmox: {
    nodeName: string | null;
    apiPort: number;
    /** SHA-256 of the API's TLS certificate, `AB:CD:…`. */
    apiCertSha256: string | null;
    /** `user@realm!tokenid`; the secret never leaves the credentials table. */
    apiTokenId: string | null;
    /**
     * What onboarding was asked to do about a cluster, and the cluster's name once a step read
     * it back (the name asked for, for a host that creates one, until then).
     */
    cluster?: { mode: "none" | "create" | "join"; name: string | null };
    /** The host was given a subscription key (sealed; the key itself never leaves the server). */
    hasSubscriptionKey?: boolean;
  };
  /** What RegisterCapacity recorded; null before it first ran. */
  capacity: {
    cores: number;
    memoryMib: number;
    imageStorageGib: number;
    registeredAt: string;
  } | null;
};

type Row = {
  id: string;
  name: string;
  address: string;
  ssh_port: number;
  ssh_user: string;
  auth_method: "password" | "private_key" | "console_key";
  host_key_sha256: string | null;
  template_check_failure: string | null;
  template_checked_at: Date | null;
  node_name: string | null;
  api_port: number;
  api_cert_sha256: string | null;
  api_token_id: string | null;
  cluster_mode: "none" | "create" | "join";
  cluster_name: string | null;
  has_subscription_key: boolean;
  capacity_cores: number | null;
  capacity_memory_mib: number | null;
  capacity_image_storage_gib: number | null;
  capacity_registered_at: Date | null;
  retired_at: Date | null;
  run_pipeline: string | null;
  run_id: string | null;
  run_status: RunSummary["status"] | null;
  current_step: string | null;
  phase: string | null;
  step_started_at: Date | null;
  failure_reason: string | null;
  failed_step: string | null;
  run_created_at: Date | null;
  finished_at: Date | null;
  stalled: boolean;
  acted_since_run: boolean;
  last_activity_at: Date;
};

/**
 * Hosts with their latest run, in one query (no request per host), by name. `hostIds` keeps the
 * given order (the fleet query picks and orders a page, this fills in the rows). Credentials
 * never leave here.
 */
export async function listHosts(
  db: Database,
  filter: { hostId?: string; hostIds?: string[] } = {},
): Promise<HostSummary[]> {
  if (filter.hostIds && filter.hostIds.length === 0) return [];
  const where = filter.hostId
    ? sql`where h.id = ${filter.hostId}`
    : filter.hostIds
      ? sql`where h.id in (${sql.join(
          filter.hostIds.map((id) => sql`${id}`),
          sql`, `,
        )})`
      : sql``;
  const result = await db.execute<Row>(sql`
    select h.id, h.name, h.address, h.ssh_port, h.ssh_user, c.kind as auth_method, h.host_key_sha256,
           h.template_check_failure, h.template_checked_at,
           h.node_name, h.api_port, h.api_cert_sha256, h.api_token_id, h.cluster_mode, h.cluster_name,
           h.subscription_key_credential_id is not null as has_subscription_key,
           h.capacity_cores, h.capacity_memory_mib, h.capacity_image_storage_gib,
           h.capacity_registered_at, h.retired_at, r.pipeline as run_pipeline,
           r.id as run_id, r.status as run_status, r.current_step, r.phase, r.step_started_at,
           r.failure_reason, r.failed_step, r.created_at as run_created_at, r.finished_at,
           ${stalledSql(sql`r.status`, sql`r.next_tick_at`)} as stalled,
           ${operatorActedSinceSql(sql`h.id`, sql`r.finished_at`)} as acted_since_run,
           coalesce(r.updated_at, h.updated_at) as last_activity_at
    from hosts h
    join credentials c on c.id = h.credential_id
    left join lateral (
      select * from runs where runs.host_id = h.id order by runs.created_at desc limit 1
    ) r on true
    ${where}
    order by h.name`);
  const summaries = result.rows.map(toSummary);
  if (!filter.hostIds) return summaries;
  const byId = new Map(summaries.map((host) => [host.id, host]));
  return filter.hostIds.flatMap((id) => byId.get(id) ?? []);
}

function iso(value: Date | string | null): string | null {
  if (value === null) return null;
  return new Date(value).toISOString();
}

function toSummary(row: Row): HostSummary {
  const state = hostStateOf(row.run_status, {
    retiredAt: row.retired_at,
    pipeline: row.run_pipeline,
    failureReason: row.failure_reason,
  });
  const templateCheck = templateCheckState(row.template_check_failure, row.template_checked_at);
  return {
    id: row.id,
    name: row.name,
    address: row.address,
    sshPort: row.ssh_port,
    sshUser: row.ssh_user,
    authMethod: row.auth_method,
    hostKeySha256: row.host_key_sha256,
    state,
    retiredAt: iso(row.retired_at),
    lastActivityAt: iso(row.last_activity_at)!,
    stalled: row.stalled,
    actedSinceRun: row.acted_since_run,
    attention: attentionReasons({
      state,
      templateCheckState: templateCheck,
      stalled: row.stalled,
      actedSinceRun: row.acted_since_run,
    }),
    templateCheck: {
      state: templateCheck,
      failure: row.template_check_failure,
      checkedAt: iso(row.template_checked_at),
    },
    proxmox: {
      nodeName: row.node_name,
      apiPort: row.api_port,
      apiCertSha256: row.api_cert_sha256,
      apiTokenId: row.api_token_id,
      cluster: { mode: row.cluster_mode, name: row.cluster_name },
      hasSubscriptionKey: row.has_subscription_key,
    },
    capacity:
      row.capacity_registered_at !== null &&
      row.capacity_cores !== null &&
      row.capacity_memory_mib !== null &&
      row.capacity_image_storage_gib !== null
        ? {
            cores: row.capacity_cores,
            memoryMib: row.capacity_memory_mib,
            imageStorageGib: row.capacity_image_storage_gib,
            registeredAt: iso(row.capacity_registered_at)!,
          }
        : null,
    run: row.run_id
      ? {
          id: row.run_id,
          status: row.run_status!,
          currentStep: row.current_step!,
          phase: row.phase,
          stepStartedAt: iso(row.step_started_at)!,
          failureReason: row.failure_reason,
          failedStep: row.failed_step,
          createdAt: iso(row.run_created_at)!,
          finishedAt: iso(row.finished_at),
        }
      : null,
  };
}
