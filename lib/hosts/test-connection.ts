import { AppError } from "@/lib/errors";
import {
  connectSsh,
  HostKeyMismatchError,
  SshAuthError,
  SshConnectError,
  SshError,
  type SshAuth,
} from "@/lib/ssh";
import { PRIVILEGE_PROBE } from "@/lib/steps/onboarding/connect-host";

/** Where and how to log in, as the edit form (or the stored host) describes it. */
export type ConnectionTarget = {
  address: string;
  sshPort: number;
  sshUser: string;
  auth: SshAuth;
  /** The host's current pin; null = first contact (the offered key is reported, not trusted). */
  pinnedHostKey: string | null;
};

export type ConnectionTestResult = {
  /** The key the host presented (equal to the pin when there is one). */
  hostKeySha256: string;
  /** How the console acts as root with these settings. */
  privilege: "root" | "passwordless sudo";
};

/** Which credential was tried, so a refusal lands next to the field the operator can fix. */
export type CredentialField = "password" | "privateKey" | "storedCredential" | "consoleKey";

const REFUSED_HINT: Record<CredentialField, string> = {
  password: "The host refused this password.",
  privateKey: "The host refused this key (is its public half in the user's authorized_keys?).",
  storedCredential: "The host refused the stored credential; enter a new one.",
  consoleKey:
    "The host refused the console's key: install it with the command shown, then try again.",
};

const FORM_FIELD: Record<CredentialField, string> = {
  password: "password",
  privateKey: "privateKey",
  storedCredential: "authMethod",
  consoleKey: "authMethod",
};

/**
 * Logs in with the given settings against the host's pin and checks the console can act as
 * root — what ConnectHost checks, without a run. Nothing is stored here; the caller decides.
 *
 * Each failure becomes an AppError on the field the operator can fix: a refused credential on
 * the credential field, an unreachable address on address and port, a missing sudo on the user.
 * A changed host key is a 409 that says what it can mean and where to go (Clear pin); no
 * password or key signature has left the console then (lib/ssh checks the key before auth).
 */
export async function testConnection(
  target: ConnectionTarget,
  credentialField: CredentialField,
): Promise<ConnectionTestResult> {
  let session;
  try {
    session = await connectSsh({
      host: target.address,
      port: target.sshPort,
      username: target.sshUser,
      auth: target.auth,
      pinnedHostKey: target.pinnedHostKey,
      readyTimeoutMs: 15_000,
    });
  } catch (error) {
    throw describeConnectionFailure(error, credentialField);
  }
  try {
    const probe = await session.exec(PRIVILEGE_PROBE, { timeoutMs: 15_000 });
    const [uid, sudo] = probe.stdout.trim().split("\n");
    if (probe.code !== 0 || uid === undefined) {
      throw new AppError(
        "unavailable",
        `Logged in, but checking the user's privileges failed (exit ${probe.code}). Check that ${target.sshUser} has a working shell on the host.`,
      );
    }
    if (uid.trim() === "0") return { hostKeySha256: session.hostKeySha256, privilege: "root" };
    if (sudo?.trim() === "sudo-ok") {
      return { hostKeySha256: session.hostKeySha256, privilege: "passwordless sudo" };
    }
    throw new AppError(
      "invalid_input",
      `${target.sshUser} can log in but is neither root nor allowed passwordless sudo; nothing was saved.`,
      {
        sshUser: [
          `Use root, or add "${target.sshUser} ALL=(ALL) NOPASSWD:ALL" to /etc/sudoers.d on the host.`,
        ],
      },
    );
  } catch (error) {
    if (error instanceof AppError) throw error;
    throw describeConnectionFailure(error, credentialField);
  } finally {
    session.close();
  }
}

/** What a failed login means for the operator, on the field they can change. */
export function describeConnectionFailure(
  error: unknown,
  credentialField: CredentialField,
): AppError {
  if (error instanceof HostKeyMismatchError) {
    return new AppError(
      "conflict",
      `The host at ${error.host}:${error.port} presented host key ${error.offered}, but ${error.pinned} is pinned. ` +
        "Nothing was saved and no credential was sent. A changed key means the machine was reinstalled " +
        "(or another machine now answers on that address), or someone is intercepting the connection. " +
        'If you know it was reinstalled, use "Clear pin" on the host page, then connect again.',
      { address: ["This address presents a different host key than the pinned one."] },
    );
  }
  if (error instanceof SshAuthError) {
    const unreadable = error.reason === "key_unreadable";
    const hint = unreadable
      ? "The key could not be read: check its format and passphrase."
      : REFUSED_HINT[credentialField];
    const field = unreadable ? "passphrase" : FORM_FIELD[credentialField];
    return new AppError("invalid_input", `${error.message} Nothing was saved.`, {
      [field]: [hint],
      ...(unreadable ? { privateKey: [hint] } : {}),
    });
  }
  if (error instanceof SshConnectError) {
    return new AppError("unavailable", `${error.message} Nothing was saved.`, {
      address: ["No SSH connection at this address and port."],
      sshPort: ["No SSH connection at this address and port."],
    });
  }
  if (error instanceof SshError) {
    return new AppError("unavailable", `${error.message} Nothing was saved.`);
  }
  // Anything else is a bug or an outage: the caller's error path logs it (without parameters).
  throw error;
}
