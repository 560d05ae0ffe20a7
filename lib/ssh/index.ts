export { connectSsh } from "./client";
export type {
  ExecOptions,
  ExecResult,
  SshAuth,
  SshSession,
  SshTarget,
  UploadOptions,
} from "./client";
export {
  SshAuthError,
  SshChannelError,
  SshCommandTimeoutError,
  SshConnectError,
  SshError,
  SshUploadError,
} from "./errors";
export { HostKeyMismatchError, fingerprintSha256, normalizeFingerprint } from "./host-key";
export { sh, shJoin, shQuote } from "./quote";
export { formatMode, uploadCommand } from "./commands";
