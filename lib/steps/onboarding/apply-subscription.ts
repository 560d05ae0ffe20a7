import { createHash } from "node:crypto";
import { advance, fail, type Outcome, type Step, type StepContext } from "@/lib/pipeline/step";
import { alreadyInPlace } from "@/lib/pipeline/already-in-place";
import { sh } from "@/lib/ssh";
import { aptLockOption, explainAptFailure } from "./apt-failure";
import {
  ENTERPRISE_URL,
  judgeRepository,
  parseRepositoryProbe,
  planRepository,
  removeSourceCommand,
  repositoryProbe,
  writeKeyAndSources,
  writeSourceCommand,
  type KeyringPin,
  type RepositoryFacts,
  type RepositoryPlan,
} from "./install-proxmox-repository";
import type { OnboardingConfig } from "./config";
import type { HostServices } from "./services";
import { withPermanentSshFailures } from "./ssh-failure";

/**
 * ApplySubscription (issue 31, item 6): a host given a subscription key has it applied, read back
 * active, and uses Proxmox's enterprise repository instead of no-subscription.
 *
 * Where it sits, and why there: the key can only be set once Proxmox VE is installed (pvesh and
 * pve-manager's subscription API come with it), but InstallProxmoxRepository must configure a
 * repository long before that, to install Proxmox VE at all. So a host is installed from
 * no-subscription as any other, and this step — after VerifyProxmoxApi, before the templates —
 * applies the key and switches the repositories. The repository goal itself is one decision
 * both steps share (`chooseRepository`: an active subscription on the host → enterprise), so a
 * re-onboarding finds both goals holding and the two steps never undo each other.
 *
 * How: `pvesh set /nodes/<node>/subscription --key …` as root over SSH, not the API: the
 * console's token holds no Sys.Modify (it must not: docs/hosts.md). The key goes on the
 * command's stdin (`"$(cat)"`), so it is in no command line the console sends or logs; it is
 * masked in the run log (the read-back prints it); it never enters a failure reason, an event
 * or the audit log.
 */

export const APPLY_SUBSCRIPTION = "ApplySubscription";

/** What pve-manager's `GET /nodes/{node}/subscription` answers (the fields decided on). */
export type SubscriptionInfo = {
  status: string;
  /** SHA-256 (hex) of the key the host holds: the key itself is never read off the host. */
  keySha256?: string;
  level?: string;
  productname?: string;
  nextduedate?: string;
  message?: string;
};

/** What to do about the subscription, from what the host reads back and the key the console holds. */
export function subscriptionPlan(info: SubscriptionInfo, key: string): "in-place" | "set" {
  return info.status === "active" && info.keySha256 === sha256Hex(key) ? "in-place" : "set";
}

/** The reason a key was not taken, in Proxmox's words (status and message), without the key. */
export function refusalReason(info: SubscriptionInfo, key: string): string {
  const said = info.message ? `: ${hideKey(info.message, key)}` : "";
  return (
    `Proxmox did not accept the subscription key: status ${info.status}${said}. ` +
    "The apt repositories were not changed (the host keeps no-subscription); check the key, " +
    "and that the host reaches shop.proxmox.com, then Retry"
  );
}

function hideKey(text: string, key: string): string {
  return text.split(key).join("********");
}

/**
 * `uname -n`, then the subscription as root reads it — with the key replaced by its SHA-256
 * on the host: the key the host holds may be another than the one the console masks (a key
 * replaced after a refusal), so it is never printed at all.
 */
export function readCommand(): string {
  return [
    "node=$(uname -n) || exit 1",
    'echo "node=$node"',
    'out=$(pvesh get "/nodes/$node/subscription" --output-format json) || exit $?',
    `printf '%s' "$out" | sed -n 's/.*"key" *: *"\\([^"]*\\)".*/\\1/p' | tr -d '\\n' | sha256sum | sed 's/ .*//; s/^/key-sha256=/'`,
    `printf '%s\\n' "$out" | sed 's/"key" *: *"[^"]*"/"key":"(hidden)"/'`,
  ].join("\n");
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

async function readSubscription(
  ctx: StepContext<HostServices>,
  key: string,
): Promise<{ node: string; info: SubscriptionInfo }> {
  const result = await ctx.services.exec(readCommand(), { timeoutMs: 60_000 });
  if (result.code !== 0) {
    throw new Error(
      `reading the subscription failed (exit ${String(result.code)}): ${hideKey(result.stderr.trim(), key)}`,
    );
  }
  const node = /^node=(.+)$/m.exec(result.stdout)?.[1]?.trim();
  const keySha256 = /^key-sha256=([0-9a-f]{64})$/m.exec(result.stdout)?.[1];
  const json = result.stdout.slice(result.stdout.indexOf("{"));
  if (!node || !keySha256 || !json.startsWith("{"))
    throw new Error("pvesh get /nodes/<node>/subscription printed no answer");
  const parsed = JSON.parse(json) as Record<string, unknown>;
  // sha256sum of nothing: the host holds no key. `key` itself is "(hidden)": left out.
  const text = (name: string) => (typeof parsed[name] === "string" ? parsed[name] : undefined);
  const info: SubscriptionInfo = { status: text("status") ?? "unknown" };
  for (const name of ["level", "productname", "nextduedate", "message"] as const) {
    const value = text(name);
    if (value !== undefined) info[name] = value;
  }
  if (keySha256 !== sha256Hex("")) info.keySha256 = keySha256;
  return { node, info };
}

/** The files as they were, byte for byte, put back after an update that failed (temp file + rename). */
async function restoreSources(
  ctx: StepContext<HostServices>,
  plan: RepositoryPlan,
  before: RepositoryFacts,
): Promise<void> {
  for (const change of plan.changes) {
    const original = before.files.get(change.name);
    const result =
      original === undefined
        ? await ctx.services.exec(removeSourceCommand(change.name))
        : await ctx.services.exec(writeSourceCommand(change.name), { stdin: original });
    if (result.code !== 0)
      ctx.log(`could not put back apt source ${change.name} (exit ${String(result.code)})`);
  }
}

async function switchRepository(
  ctx: StepContext<HostServices>,
  config: ApplySubscriptionConfig,
  pin: KeyringPin,
): Promise<Outcome | { done: string }> {
  const url = config.proxmoxRepositoryUrl;
  const probe = await ctx.services.exec(repositoryProbe(url), { timeoutMs: 60_000 });
  if (probe.code !== 0)
    throw new Error(`reading the apt sources failed (exit ${String(probe.code)})`);
  const facts = parseRepositoryProbe(probe.stdout);
  if (facts.subscriptionStatus !== "active")
    return fail(
      `the subscription read back active, but the repository probe read its status as ${facts.subscriptionStatus ?? "nothing"}`,
    );
  const plan = planRepository(facts, url, pin.fingerprint, "enterprise");
  if (!plan.update) return { done: "enterprise repository already in use" };
  const refused = await writeKeyAndSources(ctx, plan, pin, config.aptLockTimeoutSeconds);
  if (refused) return refused;
  // apt-get update proves the enterprise repository lets this host in (401 without an active
  // subscription). Short on any mirror that answers; the dpkg lock wait is bounded.
  const update = await ctx.services.exec(
    `apt-get ${aptLockOption(config.aptLockTimeoutSeconds)} update --error-on=any`,
    { timeoutMs: (300 + config.aptLockTimeoutSeconds) * 1000 },
  );
  if (update.code !== 0) {
    await restoreSources(ctx, plan, facts);
    // apt dropped the index of the sources it no longer had; fetch it again for the sources put
    // back, so the host can install from them meanwhile. Best effort: the failure below stands.
    const again = await ctx.services.exec(
      `apt-get ${aptLockOption(config.aptLockTimeoutSeconds)} update`,
      { timeoutMs: (300 + config.aptLockTimeoutSeconds) * 1000 },
    );
    if (again.code !== 0)
      ctx.log(`apt-get update with the sources put back failed too (exit ${String(again.code)})`);
    return fail(
      `${explainAptFailure(`apt-get update with the enterprise repository (${ENTERPRISE_URL})`, update, config.aptLockTimeoutSeconds)}. The apt sources were put back as they were`,
    );
  }
  const after = parseRepositoryProbe(
    (await ctx.services.exec(repositoryProbe(url), { timeoutMs: 60_000 })).stdout,
  );
  const goal = judgeRepository(after, url, pin.fingerprint, "enterprise");
  if (!goal.holds) return fail(`apt-get update succeeded, but ${goal.missing}`);
  return {
    done: "enterprise repository in use, no-subscription disabled; apt-get update succeeded",
  };
}

async function visit(
  ctx: StepContext<HostServices>,
  config: ApplySubscriptionConfig,
  pin: KeyringPin,
): Promise<Outcome> {
  const key = await ctx.services.subscriptionKey();
  if (key === null)
    return alreadyInPlace(ctx, "no subscription key for this host: it keeps no-subscription");

  let { node, info } = await readSubscription(ctx, key);
  const wasInPlace = subscriptionPlan(info, key) === "in-place";
  if (!wasInPlace) {
    const set = await ctx.services.exec(
      sh`pvesh set /nodes/${node}/subscription --key` + ' "$(cat)"',
      {
        stdin: key,
        timeoutMs: 120_000,
      },
    );
    if (set.code !== 0) {
      return fail(
        `pvesh set /nodes/${node}/subscription failed (exit ${String(set.code)}): ${hideKey(
          set.stderr.trim() || set.stdout.trim() || "no error output",
          key,
        )}. The apt repositories were not changed`,
      );
    }
    ({ node, info } = await readSubscription(ctx, key));
    if (info.status !== "active") return fail(refusalReason(info, key));
    if (info.keySha256 !== sha256Hex(key))
      return fail(
        "the subscription read back active, but with another key than the one the console set",
      );
  }
  const what = `subscription active (${info.productname ?? "level " + (info.level ?? "?")}, next due ${info.nextduedate ?? "?"})`;
  ctx.log(what);
  const repository = await switchRepository(ctx, config, pin);
  if (!("done" in repository)) return repository;
  if (wasInPlace && repository.done === "enterprise repository already in use")
    return alreadyInPlace(ctx, `${what}; ${repository.done}`);
  return advance(`${what}; ${repository.done}`);
}

type ApplySubscriptionConfig = Pick<
  OnboardingConfig,
  | "proxmoxKeyringUrl"
  | "proxmoxKeyringSha256"
  | "proxmoxKeyringFingerprint"
  | "proxmoxRepositoryUrl"
  | "aptLockTimeoutSeconds"
>;

export function applySubscription(config: ApplySubscriptionConfig): Step<HostServices> {
  const pin: KeyringPin = {
    url: config.proxmoxKeyringUrl,
    sha256: config.proxmoxKeyringSha256,
    fingerprint: config.proxmoxKeyringFingerprint,
  };
  return {
    name: APPLY_SUBSCRIPTION,
    // pvesh set (the shop's answer), the sources, apt-get update with its lock wait.
    maxDuration: () => 120 + 60 + 300 + config.aptLockTimeoutSeconds + 120,
    visit: (ctx) => withPermanentSshFailures(() => visit(ctx, config, pin)),
  };
}
