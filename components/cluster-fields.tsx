"use client";

import { useState } from "react";
import { Field, FieldError, TextField } from "./form-fields";

/** A host the new one can join through: onboarded, active, and the cluster it is in (if known). */
export type ClusterMemberChoice = { id: string; name: string; clusterName: string | null };

type Mode = "none" | "create" | "join";

export const CLUSTER_FIELDS = [
  "cluster",
  "cluster.mode",
  "cluster.name",
  "cluster.memberHostId",
  "cluster.link0",
] as const;

/**
 * The add-host form's cluster part (issue 31): standalone, a new cluster on this host, or
 * joining the cluster of a host the console onboarded. The fields are named `cluster.*`; the
 * server nests them into the `cluster` object the JSON API takes.
 */
export function ClusterFields({
  members,
  errorOf,
}: {
  members: ClusterMemberChoice[];
  errorOf: (field: string) => string | undefined;
}) {
  const [mode, setMode] = useState<Mode>("none");
  const modeError = errorOf("cluster") ?? errorOf("cluster.mode");
  return (
    <>
      <fieldset
        className="field"
        aria-invalid={modeError ? true : undefined}
        aria-describedby={modeError ? "cluster-error" : undefined}
      >
        <legend>Cluster</legend>
        <div className="radios">
          {(
            [
              ["none", "Standalone"],
              ["create", "Create a new cluster on this host"],
              ["join", "Join a cluster"],
            ] as const
          ).map(([value, label]) => (
            <label key={value}>
              <input
                type="radio"
                name="cluster.mode"
                value={value}
                checked={mode === value}
                onChange={() => setMode(value)}
                data-testid={`cluster-mode-${value}`}
              />{" "}
              {label}
            </label>
          ))}
        </div>
        <FieldError field="cluster" error={modeError} />
      </fieldset>
      {mode === "create" && (
        <TextField
          name="cluster.name"
          label="Cluster name"
          error={errorOf("cluster.name")}
          hint="At most 15 letters, digits and inner hyphens (pvecm create <name>)."
          required
          autoComplete="off"
        />
      )}
      {mode === "join" && (
        <Field
          name="cluster.memberHostId"
          label="Join through"
          error={errorOf("cluster.memberHostId")}
          hint={
            members.length === 0
              ? "No host is active yet: onboard the cluster's first host, then add the others."
              : "An active host of the cluster. The join trusts the API certificate the console pinned for it and logs in as its root."
          }
        >
          {(props) => (
            <select {...props} defaultValue="">
              <option value="" disabled>
                Choose a host…
              </option>
              {members.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}
                  {m.clusterName ? ` (cluster ${m.clusterName})` : ""}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      {mode !== "none" && (
        <TextField
          name="cluster.link0"
          label="Cluster link (link0)"
          error={errorOf("cluster.link0")}
          hint="This host's own IP address corosync uses to reach the other members."
          required
          autoComplete="off"
          inputMode="decimal"
        />
      )}
    </>
  );
}
