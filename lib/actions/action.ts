import { revalidatePath } from "next/cache";
import { unstable_rethrow } from "next/navigation";
import type { z } from "zod";
import { parseInput } from "@/lib/api/parse-input";
import type { ErrorKeys } from "@/lib/api/route";
import { currentActor, type Actor } from "@/lib/auth/actor";
import type { Role } from "@/lib/roles";
import { actionFailure, inputObject, type ActionResult } from "./action-result";

/** What reaches a server action: a form's FormData, or the object a page passes. */
export type ActionInput = FormData | Record<string, unknown>;

export type ActionSpec<R extends Role | null, S extends z.ZodType> = {
  /** What the action does, for the server log when it fails unexpectedly: "create host". */
  name: string;
  /** The role it needs; `null` for the doors of people without a session (sign-in, setup). */
  role: R;
  schema: S;
  /**
   * The submitted input as the schema's input; by default the form's fields as a plain object
   * (lib/actions/action-result.ts `inputObject`). Power and notification forms convert theirs.
   */
  input?: (raw: ActionInput) => unknown;
  /** How refused fields are keyed (lib/api/route.ts); the forms read errors by these keys. */
  errorKeys?: ErrorKeys;
  /** Pages whose data the change alters, revalidated after it succeeded. */
  revalidate?: readonly (string | readonly [string, "layout" | "page"])[];
};

type Handle<R extends Role | null, S extends z.ZodType, T extends object> = (args: {
  /** Who acts; nobody yet (`null`) for an action without a role. */
  actor: R extends Role ? Actor : null;
  input: z.output<S>;
}) => Promise<T>;

/**
 * The frame every server action shares, in the spirit of next-safe-action's action clients but
 * answering the console's own `ActionResult` (`{ ok: true, …result }` or `{ ok: false, message,
 * fieldErrors }`), which the forms and the JSON API's error descriptions share: the role is
 * checked before the input is read (without a session: "sign in"), the input is checked by its
 * schema (field errors, never a 500), the handler's call into lib/ runs, the pages it changed
 * are revalidated. Anything thrown becomes the failure the user reads (lib/api/respond.ts);
 * Next.js's own redirects pass through.
 */
async function run<R extends Role | null, S extends z.ZodType, T extends object>(
  spec: ActionSpec<R, S>,
  handle: Handle<R, S, T>,
  raw: unknown,
): Promise<ActionResult<T>> {
  try {
    const actor = (spec.role ? await currentActor(spec.role) : null) as R extends Role
      ? Actor
      : null;
    const value = spec.input ? spec.input(raw as ActionInput) : inputObject(raw as ActionInput);
    const input =
      (spec.errorKeys ?? "field") === "path"
        ? parseInput(spec.schema, value)
        : (spec.schema.parse(value) as z.output<S>);
    const result = await handle({ actor, input });
    for (const path of spec.revalidate ?? []) {
      if (typeof path === "string") revalidatePath(path);
      else revalidatePath(path[0], path[1]);
    }
    return { ok: true, ...result };
  } catch (error) {
    unstable_rethrow(error);
    return actionFailure(error, spec.name);
  }
}

/** A server action called with its input: `action(input)`. */
export function action<R extends Role | null, S extends z.ZodType, T extends object>(
  spec: ActionSpec<R, S>,
  handle: Handle<R, S, T>,
): (input: ActionInput) => Promise<ActionResult<T>> {
  return async (input) => run(spec, handle, input);
}

/** A server action for `useActionState`: the previous result first, then the form's input. */
export function formAction<R extends Role | null, S extends z.ZodType, T extends object>(
  spec: ActionSpec<R, S>,
  handle: Handle<R, S, T>,
): (previous: ActionResult<T> | null, input: ActionInput) => Promise<ActionResult<T>> {
  return async (_previous, input) => run(spec, handle, input);
}

/** A server action that takes no options (a button that only confirms): `action()`. */
export function buttonAction<R extends Role | null, S extends z.ZodType, T extends object>(
  spec: ActionSpec<R, S>,
  handle: Handle<R, S, T>,
): (input?: unknown) => Promise<ActionResult<T>> {
  return async (input = {}) => run(spec, handle, input);
}
