import { TextField } from "./form-fields";

/**
 * The SSH port and user the console logs in with, as the add-host and edit-host forms ask them;
 * each form places them in its own field row.
 */
export function SshLoginFields({
  defaults,
  errorOf,
}: {
  defaults: { sshPort: string; sshUser: string };
  errorOf: (field: string) => string | undefined;
}) {
  return (
    <>
      <TextField
        name="sshPort"
        label="SSH port"
        error={errorOf("sshPort")}
        defaultValue={defaults.sshPort}
        inputMode="numeric"
        required
      />
      <TextField
        name="sshUser"
        label="SSH user"
        error={errorOf("sshUser")}
        defaultValue={defaults.sshUser}
        hint="root, or a user with passwordless sudo."
        required
        autoComplete="off"
      />
    </>
  );
}
