/** Audited actions in words, for a sentence ("a target was protected by alice at …"). */
const ACTION_WORDS: Record<string, string> = {
  "power.ups_create": "a UPS was added",
  "power.ups_update": "a UPS was changed",
  "power.ups_delete": "a UPS was removed",
  "power.target_create": "a target was protected",
  "power.target_update": "a target was changed",
  "power.target_delete": "a target was removed",
  "power.settings_update": "the triggers and deadlines were changed",
  "power.cluster_policy": "a cluster's policy was changed",
  "notify.target_create": "a notification target was added",
  "notify.target_update": "a notification target was changed",
  "notify.target_delete": "a notification target was removed",
  "host.edit": "a host was edited",
  "host.decommission": "a host was decommissioned",
  "host.delete": "a host was deleted",
};

export function auditActionWords(action: string): string {
  return ACTION_WORDS[action] ?? action;
}
