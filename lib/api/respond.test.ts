import { afterEach, describe, expect, it, vi } from "vitest";
import { AppError } from "@/lib/errors";
import { ZCreateHost, ZHostId } from "@/lib/hosts/schemas";
import {
  describeError,
  INVALID_INPUT_MESSAGE,
  parseId,
  readJson,
  respondError,
  safeErrorSummary,
  UNEXPECTED_MESSAGE,
  UNSTORABLE_TEXT_MESSAGE,
} from "./respond";

afterEach(() => vi.restoreAllMocks());

describe("describeError", () => {
  it("answers text Postgres cannot store (NUL, broken Unicode) with 400, not a 500", () => {
    const nul = Object.assign(new Error("Failed query"), {
      cause: Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
        code: "22021",
      }),
    });
    expect(describeError(nul, "t")).toEqual({
      status: 400,
      error: UNSTORABLE_TEXT_MESSAGE,
      fieldErrors: {},
    });
  });

  it("maps AppError codes to their HTTP status with the message and field errors", () => {
    expect(describeError(new AppError("not_found", "Run x does not exist."), "t")).toEqual({
      status: 404,
      error: "Run x does not exist.",
      fieldErrors: {},
    });
    expect(
      describeError(
        new AppError("conflict", "A host named pve-01 already exists.", { name: ["taken"] }),
        "t",
      ),
    ).toEqual({
      status: 409,
      error: "A host named pve-01 already exists.",
      fieldErrors: { name: ["taken"] },
    });
    expect(describeError(new AppError("invalid_input", "bad"), "t").status).toBe(400);
    expect(describeError(new AppError("unavailable", "down"), "t").status).toBe(503);
  });

  it("maps a zod error to 400 with field errors per field", () => {
    const result = ZCreateHost.safeParse({
      name: "",
      address: "10.0.0.5",
      sshPort: "99999",
      sshUser: "root",
      authMethod: "password",
    });
    expect(result.success).toBe(false);
    const described = describeError(result.error, "t");
    expect(described.status).toBe(400);
    expect(described.error).toBe(INVALID_INPUT_MESSAGE);
    expect(described.fieldErrors.name?.[0]).toBe("Give the host a name.");
    expect(described.fieldErrors.sshPort).toEqual(["Ports run from 1 to 65535."]);
    expect(described.fieldErrors.password).toEqual(["Enter the SSH password."]);
    expect(described.fieldErrors.address).toBeUndefined();
  });

  it("answers an unexpected error with 500 and a generic message, logging it without query parameters", () => {
    const log = vi.spyOn(console, "error").mockImplementation(() => {});
    const cause = Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" });
    const error = new Error(
      "Failed query: insert into credentials ...\nparams: password,sealed-secret",
      { cause },
    );
    expect(describeError(error, "create host")).toEqual({
      status: 500,
      error: UNEXPECTED_MESSAGE,
      fieldErrors: {},
    });
    expect(log).toHaveBeenCalledOnce();
    const line = String(log.mock.calls[0]?.[0]);
    expect(line).toContain("create host failed");
    expect(line).toContain("ECONNREFUSED");
    expect(line).not.toContain("sealed-secret");
  });
});

describe("safeErrorSummary", () => {
  it("cuts drizzle's params off the message", () => {
    expect(safeErrorSummary(new Error("Failed query: select 1\nparams: hunter2"))).toBe(
      "Error: Failed query: select 1",
    );
  });
});

describe("respondError", () => {
  it("returns { error, fieldErrors } as JSON with the mapped status", async () => {
    const response = respondError(
      new AppError("conflict", "Only a failed run can be retried."),
      "t",
    );
    expect(response.status).toBe(409);
    expect(await response.json()).toEqual({
      error: "Only a failed run can be retried.",
      fieldErrors: {},
    });
  });
});

describe("readJson", () => {
  it("turns a body that is not JSON into a 400, not a 500", async () => {
    const request = new Request("http://x/api/hosts", { method: "POST", body: "{nope" });
    const error = await readJson(request).catch((e: unknown) => e);
    expect(describeError(error, "t").status).toBe(400);
  });
});

describe("parseId", () => {
  it("answers a malformed id with 400 before it reaches Postgres", () => {
    let caught: unknown;
    try {
      parseId(ZHostId, "not-a-uuid", "hostId");
    } catch (error) {
      caught = error;
    }
    expect(describeError(caught, "t")).toMatchObject({
      status: 400,
      fieldErrors: { hostId: ["Not a host id."] },
    });
  });
  it("passes a uuid through", () => {
    const id = "0b7c6f1e-8d2a-4c1b-9f3e-2a5d6c7b8e9f";
    expect(parseId(ZHostId, id, "hostId")).toBe(id);
  });
});
