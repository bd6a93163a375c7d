//! Answers as the browser reads them: a JSON result with 200, or the
//! contract's `{code, message}` with the HTTP status its code stands for.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use overseer_core::{ApiError, ErrorCode};

/// The HTTP status of an error code.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::InvalidTransition | ErrorCode::AlreadyDecided | ErrorCode::Conflict => {
            StatusCode::CONFLICT
        }
        ErrorCode::InvalidInput => StatusCode::BAD_REQUEST,
        ErrorCode::Storage | ErrorCode::EngineUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// An error with its code's status.
pub fn error(e: ApiError) -> Response {
    let status = status_of(e.code);
    error_with(status, e)
}

/// An error with a status of its own (413 carries `invalid_input`).
pub fn error_with(status: StatusCode, e: ApiError) -> Response {
    json(status, &e)
}

/// `value` as JSON with `status`; never cached (the answers are live state).
pub fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => (
            status,
            [
                (
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ),
                (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            ],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            format!(
                "{{\"code\":\"internal\",\"message\":{}}}",
                serde_json::Value::String(format!("the answer could not be written: {e}"))
            ),
        )
            .into_response(),
    }
}

/// The outcome of a call: 200 with its result, or its error.
pub fn outcome(r: Result<serde_json::Value, ApiError>) -> Response {
    match r {
        Ok(v) => json(StatusCode::OK, &v),
        Err(e) => error(e),
    }
}
