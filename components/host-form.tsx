"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { createHostAction } from "@/lib/actions/create-host";
import type { AuthMethod } from "@/lib/host-access/credential-schema";
import { SubmitActions, useActionForm } from "./action-form";
import { CLUSTER_FIELDS, ClusterFields, type ClusterMemberChoice } from "./cluster-fields";
import { CopyField } from "./copy-field";
import { CREDENTIAL_FIELDS, CredentialFields } from "./credential-fields";
import { TextField } from "./form-fields";
import { SshLoginFields } from "./ssh-login-fields";

/** Field order of the form: the first invalid one in this order gets the focus. */
const FIELDS = [
  "name",
  "address",
  "sshPort",
  "sshUser",
  "apiPort",
  ...CREDENTIAL_FIELDS,
  ...CLUSTER_FIELDS,
  "subscriptionKey",
] as const;

/** What the form shows of the console's key (never the private half). */
export type HostFormConsoleKey = {
  id: string;
  publicKey: string;
  fingerprint: string;
  installCommand: string;
};

/**
 * The add-host form. Submits through the `createHost` server action; field errors appear under
 * their fields, anything else above the form. On success it opens the new host's page.
 *
 * Password is preselected: a freshly installed Debian host accepts it as delivered, while the
 * console's key first has to be installed on the host (the form shows the one-line command).
 */
export function HostForm({
  consoleKey,
  clusterMembers,
}: {
  consoleKey: HostFormConsoleKey;
  /** Hosts a new one can join through (active, onboarded by the console). */
  clusterMembers: ClusterMemberChoice[];
}) {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError } = useActionForm(createHostAction, FIELDS);
  const [authMethod, setAuthMethod] = useState<AuthMethod>("password");

  useEffect(() => {
    if (state?.ok) router.push(`/hosts/${state.hostId}`);
  }, [state, router]);

  return (
    <form {...formProps} data-testid="host-form">
      {formError}

      <TextField
        name="name"
        label="Name"
        error={errorOf("name")}
        hint="Your label for the host in the console, e.g. pve-01. The Proxmox node name is read from the host during onboarding and shown beside it when it differs."
        required
        autoComplete="off"
      />
      <TextField
        name="address"
        label="Address"
        error={errorOf("address")}
        hint="IP address or DNS name the console reaches the host on."
        required
        autoComplete="off"
      />
      <div className="field-row">
        <SshLoginFields defaults={{ sshPort: "22", sshUser: "root" }} errorOf={errorOf} />
        <TextField
          name="apiPort"
          label="Proxmox API port"
          error={errorOf("apiPort")}
          defaultValue="8006"
          inputMode="numeric"
          hint="8006 unless the API is forwarded elsewhere."
        />
      </div>

      <CredentialFields
        legend="Authentication"
        choices={[
          { value: "console_key", label: "Use the console's key" },
          { value: "password", label: "Password" },
          { value: "private_key", label: "Private key" },
        ]}
        method={authMethod}
        onMethodChange={setAuthMethod}
        errorOf={errorOf}
        consoleKey={{
          id: consoleKey.id,
          testId: "console-key-install",
          instructions: (
            <>
              <p className="field-hint">
                Run this once on the host as the SSH user above; it adds the console&apos;s public
                key ({consoleKey.fingerprint}) to{" "}
                <span className="mono">~/.ssh/authorized_keys</span>. The console keeps the private
                key; nothing secret is typed here.
              </p>
              <CopyField
                label="Install command"
                value={consoleKey.installCommand}
                rows={4}
                testId="console-key-install-command"
              />
              <CopyField
                label="Public key"
                value={consoleKey.publicKey}
                rows={2}
                testId="console-key-public"
              />
            </>
          ),
        }}
        labels={{
          password: "SSH password",
          privateKey: "Private key",
          passphraseHint: "Only if the key is encrypted.",
        }}
      />

      <ClusterFields members={clusterMembers} errorOf={errorOf} />

      <TextField
        name="subscriptionKey"
        label="Proxmox VE subscription key (optional)"
        error={errorOf("subscriptionKey")}
        hint="E.g. pve2c-0123456789. Applied on the host once Proxmox VE is installed; the host then uses the enterprise repository instead of no-subscription. Kept sealed, never shown again. Leave empty for no subscription."
        autoComplete="off"
        spellCheck={false}
      />

      <SubmitActions
        pending={pending}
        label="Add host and start onboarding"
        pendingLabel="Adding…"
        testId="submit-host"
      />
    </form>
  );
}
