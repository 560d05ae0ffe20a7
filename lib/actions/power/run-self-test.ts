"use server";

import { getDb } from "@/lib/db/client";
import { requestSelfTest, ZRequestSelfTest } from "@/lib/power/self-test/request-self-test";
import { buttonAction } from "../action";

/** The dashboard's "Run self-test now" (operators and admins): queued for the worker. */
export const runSelfTestAction = buttonAction(
  { name: "run self-test", role: "operator", schema: ZRequestSelfTest, errorKeys: "path" },
  async ({ actor }) => ({ message: await requestSelfTest(getDb(), actor) }),
);
