"use client";

import { useRouter } from "next/navigation";
import { useEffect, useState } from "react";
import { createNotificationTargetAction } from "@/lib/actions/notify/create-notification-target";
import { updateNotificationTargetAction } from "@/lib/actions/notify/update-notification-target";
import { FORMAT_LABELS, FORMATS, type NotificationFormat } from "@/lib/notify/formats";
import { KNOWN_KINDS, kindTitle, SEVERITIES } from "@/lib/notify/message";
import type { NotificationTargetView } from "@/lib/notify/targets";
import { SubmitActions, useActionForm } from "../action-form";
import { Field, FieldError, TextField } from "../form-fields";

const FIELDS = [
  "name",
  "format",
  "url",
  "template",
  "templateEscape",
  "templateContentType",
  "minSeverity",
  "eventKinds",
  "authHeaderName",
  "authHeaderValue",
  "enabled",
] as const;

const TEMPLATE_HINT =
  "Mustache: {{title}}, {{text}}, {{kind}}, {{severity}}, {{severityUpper}}, {{at}}, {{subject}}, {{id}}, {{source}}. Each {{value}} is escaped as the setting below says.";

/**
 * A notification target. The URL and the auth header's value are write-only: a stored one is
 * never sent back — the field says it is set and stays empty, and empty keeps it.
 */
export function NotificationTargetForm({
  target = null,
}: {
  target?: NotificationTargetView | null;
}) {
  const router = useRouter();
  const { state, pending, errorOf, formProps, formError } = useActionForm(
    target ? updateNotificationTargetAction : createNotificationTargetAction,
    FIELDS,
  );
  const [format, setFormat] = useState<NotificationFormat>(target?.format ?? "slack");
  const extraKinds = (target?.eventKinds ?? []).filter((k) => !KNOWN_KINDS.includes(k));

  useEffect(() => {
    if (state?.ok) router.push("/power/notifications");
  }, [state, router]);

  return (
    <form {...formProps} data-testid="notify-form">
      {formError}
      {target && <input type="hidden" name="id" value={target.id} />}
      <input type="hidden" name="checkboxes" value="yes" />
      <TextField
        name="name"
        label="Name"
        defaultValue={target?.name ?? ""}
        error={errorOf("name")}
        required
        autoComplete="off"
      />
      <Field name="format" label="Format" error={errorOf("format")}>
        {(props) => (
          <select
            {...props}
            className="control"
            value={format}
            onChange={(event) => setFormat(event.target.value as NotificationFormat)}
          >
            {FORMATS.map((f) => (
              <option key={f} value={f}>
                {FORMAT_LABELS[f]}
              </option>
            ))}
          </select>
        )}
      </Field>
      <TextField
        name="url"
        label="Webhook URL"
        type="url"
        defaultValue=""
        placeholder={target ? `${target.urlOrigin}/… (set — leave empty to keep it)` : "https://…"}
        hint={
          target
            ? "The stored URL is kept secret (it is the webhook's credential): enter a new one only to replace it."
            : "As the service gave it; stored sealed, and only its origin is shown afterwards."
        }
        error={errorOf("url")}
        required={!target}
        autoComplete="off"
        spellCheck={false}
      />
      {format === "template" && (
        <>
          <Field
            name="template"
            label="Body template"
            error={errorOf("template")}
            hint={TEMPLATE_HINT}
          >
            {(props) => (
              <textarea
                {...props}
                className="control"
                rows={6}
                defaultValue={
                  target?.template ?? '{"text": "{{severityUpper}} {{title}}: {{text}}"}'
                }
                spellCheck={false}
              />
            )}
          </Field>
          <Field name="templateEscape" label="Escape values" error={errorOf("templateEscape")}>
            {(props) => (
              <select
                {...props}
                className="control"
                defaultValue={target?.templateEscape ?? "json"}
              >
                <option value="json">inside a JSON string (the body is JSON)</option>
                <option value="none">not at all (a plain text body)</option>
              </select>
            )}
          </Field>
          <TextField
            name="templateContentType"
            label="Content type (optional)"
            defaultValue={target?.templateContentType ?? ""}
            placeholder="application/json"
            error={errorOf("templateContentType")}
          />
        </>
      )}
      <Field name="minSeverity" label="Minimum severity" error={errorOf("minSeverity")}>
        {(props) => (
          <select {...props} className="control" defaultValue={target?.minSeverity ?? "warning"}>
            {SEVERITIES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        )}
      </Field>
      <fieldset className="field">
        <legend>Event kinds (none ticked: every kind)</legend>
        {KNOWN_KINDS.map((kind) => (
          <label key={kind} className="checkbox">
            <input
              type="checkbox"
              name="eventKinds"
              value={kind}
              defaultChecked={target?.eventKinds.includes(kind) ?? false}
            />{" "}
            {kindTitle(kind)} <code>{kind}</code>
          </label>
        ))}
        <TextField
          name="extraEventKinds"
          label="More kinds (comma-separated; a family as ups.*)"
          defaultValue={extraKinds.join(", ")}
          error={undefined}
        />
        <FieldError field="eventKinds" error={errorOf("eventKinds")} />
      </fieldset>
      <TextField
        name="authHeaderName"
        label="Auth header name (optional)"
        defaultValue={target?.authHeaderName ?? ""}
        placeholder="Authorization"
        error={errorOf("authHeaderName")}
        autoComplete="off"
      />
      <TextField
        name="authHeaderValue"
        label="Auth header value"
        type="password"
        defaultValue=""
        placeholder={target?.hasAuthHeader ? "set — leave empty to keep it" : ""}
        hint={
          target?.hasAuthHeader ? "A value is stored; enter a new one to replace it." : undefined
        }
        error={errorOf("authHeaderValue")}
        autoComplete="new-password"
      />
      {target?.hasAuthHeader && (
        <label className="checkbox">
          <input type="checkbox" name="removeAuthHeader" /> Remove the auth header
        </label>
      )}
      <label className="checkbox">
        <input type="checkbox" name="enabled" defaultChecked={target?.enabled ?? true} /> Enabled
      </label>
      <SubmitActions
        pending={pending}
        label={target ? "Save target" : "Add target"}
        pendingLabel="Saving…"
        testId="notify-submit"
      />
    </form>
  );
}
