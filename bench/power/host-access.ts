import { connectHost } from "@/lib/steps/onboarding/connect-host";
import { createApiToken } from "@/lib/steps/onboarding/create-api-token";
import { apiTestPipeline } from "@/test/fixtures/api-steps";

/**
 * The protected lab node's API access as onboarding leaves it — its token and the pinned
 * certificate — through the real ConnectHost and CreateApiToken steps (the power tests do the
 * same), without the template build the protected host does not need.
 */
export const hostAccessPipeline = apiTestPipeline("bench-power-host-access", [
  connectHost,
  createApiToken,
]);
