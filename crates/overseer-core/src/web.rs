//! Serving browsers: whether and where the engine serves its UI and the
//! window's operations to browsers and phones, as the owner set it (kept in
//! the store, so it survives restarts), and how serving went.
//!
//! Loopback by default; any other address only with TLS (a certificate and
//! key the user gives). Plain HTTP off loopback is refused with
//! [`plain_http_refusal`], the one explanation every surface gives.

use crate::{ApiError, FieldError};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Where the engine serves browsers when none was set.
pub const DEFAULT_WEB_ADDR: &str = "127.0.0.1:8765";

/// Whether and where the engine serves browsers (Settings, "Browsers and
/// phones"). Only the local owner may change it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebSettings {
    /// Serve browsers (at start too, until switched off).
    pub enabled: bool,
    /// `IP:PORT` to listen on: a loopback address (`127.0.0.1:8765`), or any
    /// other only with `tls_cert` and `tls_key`.
    pub addr: String,
    /// The TLS certificate chain, a PEM file's path.
    #[serde(default)]
    pub tls_cert: Option<String>,
    /// The TLS certificate's private key, a PEM file's path.
    #[serde(default)]
    pub tls_key: Option<String>,
    /// Where a TLS-terminating proxy (`tailscale serve`, Caddy, nginx) serves
    /// this engine, such as `https://box.tailnet.ts.net`: its pages are
    /// answered too, and the first is the URL pairing shows.
    #[serde(default)]
    pub public_origins: Vec<String>,
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            enabled: false,
            addr: DEFAULT_WEB_ADDR.to_owned(),
            tls_cert: None,
            tls_key: None,
            public_origins: Vec::new(),
        }
    }
}

/// How serving browsers stands now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct WebStatus {
    /// As the owner set it.
    pub settings: WebSettings,
    /// Whether the engine serves browsers now.
    pub serving: bool,
    /// The page a browser opens, when it serves (what a pairing shows, with
    /// its QR code); null when it does not, or when it listens on every
    /// address and no public origin names it.
    pub url: Option<String>,
    /// Why it does not serve as set: the address is in use, a certificate
    /// cannot be used, this engine's host cannot serve browsers.
    pub error: Option<ApiError>,
}

/// The settings as given, tidied (blank paths are none, blank origins
/// dropped) and checked: every problem named by its field (`addr`,
/// `tls_cert`, `tls_key`, `public_origins`). The address and the TLS files
/// themselves are tried only when serving starts.
pub fn check_web_settings(given: &WebSettings) -> Result<WebSettings, Vec<FieldError>> {
    let blank = |p: &Option<String>| {
        p.as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_owned)
    };
    let settings = WebSettings {
        enabled: given.enabled,
        addr: given.addr.trim().to_owned(),
        tls_cert: blank(&given.tls_cert),
        tls_key: blank(&given.tls_key),
        public_origins: given
            .public_origins
            .iter()
            .map(|o| o.trim().to_owned())
            .filter(|o| !o.is_empty())
            .collect(),
    };
    let mut errors = Vec::new();
    match settings.addr.parse::<SocketAddr>() {
        Err(_) => errors.push(FieldError::new(
            "addr",
            format!(
                "{:?} is not an address and a port: give one like 127.0.0.1:8765 (this machine \
                 only), or with a certificate 0.0.0.0:8765 or [::]:8765",
                settings.addr
            ),
        )),
        Ok(addr) if !addr.ip().is_loopback() && settings.tls_cert.is_none() => {
            errors.push(FieldError::new("addr", plain_http_refusal(addr)))
        }
        Ok(_) => {}
    }
    match (&settings.tls_cert, &settings.tls_key) {
        (Some(_), None) => errors.push(FieldError::new(
            "tls_key",
            "give the certificate's private key too (a PEM file), or neither",
        )),
        (None, Some(_)) => errors.push(FieldError::new(
            "tls_cert",
            "give the certificate chain too (a PEM file), or neither",
        )),
        _ => {}
    }
    for (i, origin) in settings.public_origins.iter().enumerate() {
        if let Err(why) = check_origin(origin) {
            errors.push(FieldError::new(format!("public_origins[{i}]"), why));
        }
    }
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(errors)
    }
}

/// Why plain HTTP is refused on a non-loopback `addr`, and what to do
/// instead: what `overseer serve --web` and Settings both say.
pub fn plain_http_refusal(addr: SocketAddr) -> String {
    format!(
        "refusing to serve plain HTTP on {addr}: it is not a loopback address, so device \
         credentials and decisions would cross the network unencrypted. Either give a \
         certificate (--tls-cert CERT.pem --tls-key KEY.pem; in Settings, the TLS certificate and \
         key), or serve on loopback (--web 127.0.0.1:PORT) and put TLS in front of it: \
         `tailscale serve --bg http://127.0.0.1:PORT` for your tailnet, or a reverse proxy \
         (Caddy, nginx) that terminates TLS and forwards to 127.0.0.1:PORT; then add \
         --web-origin https://NAME (in Settings, a public origin), the address the browser opens"
    )
}

/// `url` as an origin (`scheme://host[:port]`, lowercase), or why not.
pub fn check_origin(url: &str) -> Result<String, String> {
    let bad = |why: &str| {
        format!(
            "{url:?} is not an origin ({why}): give the address the browser opens, like \
             https://box.tailnet.ts.net or https://overseer.example.com:8443"
        )
    };
    let url = url.trim_end_matches('/');
    let (scheme, rest) = url.split_once("://").ok_or_else(|| bad("no scheme"))?;
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "https" && scheme != "http" {
        return Err(bad("the scheme is neither https nor http"));
    }
    if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
        return Err(bad("only a scheme, a host and a port"));
    }
    Ok(format!("{scheme}://{}", rest.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(addr: &str) -> WebSettings {
        WebSettings {
            enabled: true,
            addr: addr.to_owned(),
            ..WebSettings::default()
        }
    }

    #[test]
    fn loopback_needs_no_certificate() {
        assert!(check_web_settings(&on("127.0.0.1:0")).is_ok());
        assert!(check_web_settings(&on("[::1]:8765")).is_ok());
    }

    #[test]
    fn plain_http_off_loopback_is_refused_with_the_explanation() {
        let errors = check_web_settings(&on("0.0.0.0:8765")).expect_err("refused");
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "addr");
        assert!(errors[0]
            .message
            .starts_with("refusing to serve plain HTTP on 0.0.0.0:8765"));
        assert!(errors[0].message.contains("tailscale serve"));
    }

    #[test]
    fn a_certificate_without_its_key_and_bad_origins_are_named() {
        let mut s = on("0.0.0.0:8765");
        s.tls_cert = Some("cert.pem".into());
        s.tls_key = Some("  ".into());
        s.public_origins = vec!["box.example".into(), String::new()];
        let errors = check_web_settings(&s).expect_err("refused");
        let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["tls_key", "public_origins[0]"]);
    }

    #[test]
    fn origins_are_lowercased_and_need_a_scheme() {
        assert_eq!(
            check_origin("HTTPS://Box.Example/").as_deref(),
            Ok("https://box.example")
        );
        assert!(check_origin("ftp://box").is_err());
        assert!(check_origin("https://box/path").is_err());
    }
}
