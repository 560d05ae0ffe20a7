import { fail, type Step } from "@/lib/pipeline/step";
import type { ProxmoxClient } from "@/lib/proxmox/client";
import { bootDiskVolume } from "@/lib/proxmox/is-template";
import { withPermanentProxmoxFailures } from "./proxmox-failure";
import type { HostServices } from "./services";
import { alreadyInPlace } from "../../pipeline/already-in-place";

export type MissingTemplate = { vmid: number; why: string };

/**
 * How a recorded template check failure (hosts.templateCheckFailure) begins: templates that
 * are missing, or a host that could not be asked — which must never read as "missing".
 */
export const TEMPLATES_MISSING = "templates missing";
export const COULD_NOT_CHECK = "could not check templates";

export type TemplateCheckState = "unchecked" | "ok" | "missing" | "unknown";

/** The state of a recorded check, for the UI. */
export function templateCheckState(
  failure: string | null,
  checkedAt: Date | string | null,
): TemplateCheckState {
  if (failure === null) return checkedAt === null ? "unchecked" : "ok";
  return failure.startsWith(COULD_NOT_CHECK) ? "unknown" : "missing";
}

/**
 * Why `vmid` is not a usable template, for the operator. Asked only after `isTemplate` said
 * false; if this second look fails, the plain verdict stands (the decision was isTemplate's).
 */
async function whyNotTemplate(client: ProxmoxClient, vmid: number): Promise<string> {
  try {
    const list = await client.listVms();
    if (!list.some((vm) => vm.vmid === vmid)) return `VMID ${vmid} does not exist`;
    const config = await client.vmConfig(vmid);
    if (Number(config.template) !== 1)
      return `VM ${vmid} exists but is not a template (no "template: 1")`;
    const disk = bootDiskVolume(config);
    return disk
      ? `VM ${vmid} has "template: 1" but its boot disk ${disk} was never converted to base-… (a failed qm template)`
      : `VM ${vmid} has "template: 1" but no boot disk`;
  } catch {
    return `VMID ${vmid} is not a template`;
  }
}

/**
 * The required VMIDs that are not usable templates, each with the reason. The decision is
 * `isTemplate` per VMID (the flag AND a `base-` boot disk); it throws when Proxmox could not be
 * asked, so "could not ask" propagates to the caller and is never reported as missing.
 * Shared by VerifyVmTemplate and the periodic VmTemplateCheck.
 */
export async function findMissingTemplates(
  client: ProxmoxClient,
  vmids: readonly number[],
): Promise<MissingTemplate[]> {
  const missing: number[] = [];
  for (const vmid of vmids) {
    if (!(await client.isTemplate(vmid))) missing.push(vmid);
  }
  const out: MissingTemplate[] = [];
  for (const vmid of missing) out.push({ vmid, why: await whyNotTemplate(client, vmid) });
  return out;
}

/** One line naming every missing VMID with its reason. */
export function missingTemplatesText(missing: readonly MissingTemplate[]): string {
  return missing.map((m) => m.why).join("; ");
}

/**
 * Goal: every VMID the catalog requires is a usable template on the host (`isTemplate`, not
 * existence: an aborted build leaves a plain VM behind). No published catalog → nothing is
 * required and Proxmox is not asked. Its verdict is recorded as the host's template check, the
 * same record the periodic VmTemplateCheck keeps: this verification is a check too (issue 19:
 * the host page said "not checked yet" right after it).
 */
export const verifyVmTemplate: Step<HostServices> = {
  name: "VerifyVmTemplate",
  maxDuration: () => 300,
  visit: (ctx) =>
    withPermanentProxmoxFailures(async () => {
      const required = await ctx.services.requiredTemplates();
      const checked = (failure: string | null) =>
        ctx.services.updateHost({ templateCheckFailure: failure, templateCheckedAt: new Date() });
      if (!required.catalogPublished) {
        await checked(null);
        return alreadyInPlace(ctx, "no published catalog: no template required yet");
      }
      if (required.vmids.length === 0) {
        await checked(null);
        return alreadyInPlace(ctx, "no plan version on sale requires a template");
      }
      const client = await ctx.services.proxmox();
      const missing = await findMissingTemplates(client, required.vmids);
      if (missing.length > 0) {
        await checked(`${TEMPLATES_MISSING}: ${missingTemplatesText(missing)}`);
        const host = await ctx.services.host();
        return fail(
          `the catalog requires template${required.vmids.length > 1 ? "s" : ""} ${required.vmids.join(", ")} on ${host.nodeName}: ` +
            `${missingTemplatesText(missing)}. Start the onboarding again so BuildVmTemplate builds what is missing`,
        );
      }
      await checked(null);
      return alreadyInPlace(
        ctx,
        `templates ${required.vmids.join(", ")} are templates with base- disks`,
      );
    }),
};
