"use client";

import { createContext, useContext, type ReactNode } from "react";
import type { Actor } from "@/lib/auth/actor";
import { hasRole, type Role } from "@/lib/roles";

const ActorContext = createContext<Actor | null>(null);

/** Makes the signed-in user known to client components (set once by the console layout). */
export function ActorProvider({ actor, children }: { actor: Actor; children: ReactNode }) {
  return <ActorContext.Provider value={actor}>{children}</ActorContext.Provider>;
}

export function useActor(): Actor | null {
  return useContext(ActorContext);
}

/**
 * Whether the signed-in user's role allows `required`: buttons they cannot use are hidden.
 * Only a courtesy — every action and route checks the role on the server again.
 */
export function useCan(required: Role): boolean {
  const actor = useContext(ActorContext);
  return actor !== null && hasRole(actor.role, required);
}

/** Renders its children only for a role that may use them (see useCan). */
export function IfCan({ role, children }: { role: Role; children: ReactNode }) {
  return useCan(role) ? <>{children}</> : null;
}
