//! The UI built into the binary (ui/dist at compile time), served to
//! browsers with the app's security headers.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

mod built {
    include!(concat!(env!("OUT_DIR"), "/assets.rs"));
}

/// Whether this binary carries the UI (built with ui/dist present).
pub const BUILT: bool = built::BUILT;

/// The app's Content-Security-Policy (the desktop window's, in
/// src-tauri/tauri.conf.json), with the engine's own origin to connect to
/// in place of the window's IPC: same-origin HTTP and the WebSocket.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; \
base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The headers every page and asset carries.
pub fn secure(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("json" | "map") => "application/json",
        Some("webmanifest") => "application/manifest+json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

fn file(path: &str) -> Option<&'static [u8]> {
    built::FILES
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, bytes)| *bytes)
}

/// The file at `path` (under ui/dist); any other path is the app's page
/// (its router reads the path).
pub fn get(path: &str) -> Response {
    let path = path.trim_start_matches('/');
    let (name, bytes) = match file(path) {
        Some(bytes) if !path.is_empty() => (path, bytes),
        _ => match file("index.html") {
            Some(bytes) => ("index.html", bytes),
            None => {
                return secure(
                    (
                        StatusCode::SERVICE_UNAVAILABLE,
                        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                        "This overseer was built without its UI (ui/dist was missing). \
                         Build the UI (`npm run build` in ui/, or `make app`) and build \
                         overseer again.\n",
                    )
                        .into_response(),
                )
            }
        },
    };
    // Hashed asset names never change content; the page itself is revalidated.
    let cache = if name.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    secure(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type(name)),
                (header::CACHE_CONTROL, cache),
            ],
            bytes,
        )
            .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The browser's policy is the window's, but for where it may connect.
    #[test]
    fn the_csp_is_the_apps_with_the_engines_own_origin_to_connect_to() {
        let conf = include_str!("../../../src-tauri/tauri.conf.json");
        let conf: serde_json::Value = serde_json::from_str(conf).expect("tauri.conf.json");
        let csp = conf["app"]["security"]["csp"]
            .as_object()
            .expect("the app's csp");
        let mut app: Vec<String> = csp
            .iter()
            .filter(|(k, _)| *k != "connect-src")
            .map(|(k, v)| format!("{k} {}", v.as_str().unwrap_or_default()))
            .collect();
        app.push("connect-src 'self'".to_owned());
        app.sort();
        let mut ours: Vec<String> = CSP.split("; ").map(str::to_owned).collect();
        ours.sort();
        assert_eq!(ours, app);
    }
}
