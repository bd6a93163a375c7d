import type { ApiError, ErrorCode, FieldError } from "../types";

const CODES: readonly ErrorCode[] = [
  "not_found",
  "invalid_transition",
  "already_decided",
  "conflict",
  "invalid_input",
  "storage",
  "engine_unavailable",
  "forbidden",
  "unauthorized",
  "rate_limited",
  "internal",
];

function isFieldError(f: unknown): f is FieldError {
  return typeof f === "object" && f !== null && typeof (f as FieldError).field === "string" && typeof (f as FieldError).message === "string";
}

/** Whatever a call rejected with, as `{code, message}` (and the fields in
 * error, when the engine named them). */
export function toApiError(e: unknown): ApiError {
  if (typeof e === "object" && e !== null && "code" in e && "message" in e) {
    const { code, message, fields } = e as { code: unknown; message: unknown; fields?: unknown };
    if (typeof code === "string" && (CODES as readonly string[]).includes(code) && typeof message === "string") {
      const named = Array.isArray(fields) ? fields.filter(isFieldError) : [];
      return named.length > 0 ? { code: code as ErrorCode, message, fields: named } : { code: code as ErrorCode, message };
    }
  }
  if (e instanceof Error) return { code: "internal", message: e.message };
  return { code: "internal", message: String(e) };
}
