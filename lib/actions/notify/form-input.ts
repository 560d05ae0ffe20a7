import { inputObject } from "@/lib/actions/action-result";

/** Fields holding yes/no: a checkbox sends `on` when ticked and nothing when not. */
const CHECKBOXES = ["enabled", "removeAuthHeader"] as const;

/**
 * A notification target form as the domain schemas take it: `eventKinds` from the ticked boxes
 * plus the comma-separated extra kinds, the checkboxes as booleans (on an edit form, an absent
 * checkbox means "off", so the form says `checkboxes` it carries). Plain objects (the JSON calls
 * the API makes) pass through untouched.
 */
export function notifyFormInput(
  input: FormData | Record<string, unknown>,
): Record<string, unknown> {
  if (!(input instanceof FormData)) return input;
  const object = inputObject(input);
  const ticked = input.getAll("eventKinds").filter((v): v is string => typeof v === "string");
  const extra = String(input.get("extraEventKinds") ?? "")
    .split(/[\s,]+/)
    .filter(Boolean);
  delete object.extraEventKinds;
  object.eventKinds = [...new Set([...ticked, ...extra])];
  const formHasCheckboxes = input.get("checkboxes") === "yes";
  delete object.checkboxes;
  for (const name of CHECKBOXES) {
    const value = input.get(name);
    if (value !== null) object[name] = value === "on" || value === "true";
    else if (formHasCheckboxes) object[name] = false;
  }
  return object;
}
