import type { ApiError, ErrorCode } from "../types";

const CODES: readonly ErrorCode[] = [
  "not_found",
  "invalid_transition",
  "already_decided",
  "conflict",
  "invalid_input",
  "storage",
  "engine_unavailable",
  "forbidden",
  "internal",
];

/** Whatever a call rejected with, as `{code, message}`. */
export function toApiError(e: unknown): ApiError {
  if (typeof e === "object" && e !== null && "code" in e && "message" in e) {
    const { code, message } = e as { code: unknown; message: unknown };
    if (typeof code === "string" && (CODES as readonly string[]).includes(code) && typeof message === "string") {
      return { code: code as ErrorCode, message };
    }
  }
  if (e instanceof Error) return { code: "internal", message: e.message };
  return { code: "internal", message: String(e) };
}
