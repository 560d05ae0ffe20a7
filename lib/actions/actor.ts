/**
 * Who is acting, as recorded in events. There are no users yet; when authentication arrives,
 * this is the one place that learns to read the session (and to refuse when there is none).
 */
export async function currentActor(): Promise<string> {
  return "operator";
}
