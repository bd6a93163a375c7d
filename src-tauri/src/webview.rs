//! How the window's web view is set up on Linux (WebKitGTK), measured with
//! the window benchmarks (tests/e2e/bench) on a 2-core machine under Xvfb.
//!
//! - **No accelerated compositing** by default. The window is a table and a
//!   few panels: nothing it draws needs the GPU, and WebKit's compositing
//!   mode costs a GL stack (Mesa's llvmpipe where there is no GPU), a
//!   compositor thread and tile buffers. With it, the web process held
//!   about 90 MB more (220 vs 130 MB PSS idle on the demo fleet), and a
//!   frame waited on the compositor: a pushed row reached the DOM in 28 ms
//!   but the screen only after 261 ms (p99). Without it WebKit paints the
//!   page into shared memory on the CPU. A user who wants compositing back
//!   sets `WEBKIT_DISABLE_COMPOSITING_MODE` themselves (WebKit reads only
//!   whether it is set, so `OVERSEER_WEBKIT_COMPOSITING=1` is the way to ask
//!   for WebKit's own default).
//! - **A document viewer's caches**: one local page that never navigates
//!   away has no use for a browser's memory cache or back/forward page
//!   cache; no WebGL or Web Audio either.

/// WebKit reads this when it starts its first web view.
const DISABLE_COMPOSITING: &str = "WEBKIT_DISABLE_COMPOSITING_MODE";
/// Set to `1` to leave WebKit's compositing as WebKit chooses.
const KEEP_COMPOSITING: &str = "OVERSEER_WEBKIT_COMPOSITING";

/// Whether to turn WebKit's compositing mode off, from the environment:
/// not when the user set WebKit's own variable (either way) or asked us not to.
fn disable_compositing(webkit_var_set: bool, keep: Option<&std::ffi::OsStr>) -> bool {
    !webkit_var_set && keep.is_none_or(|v| v != "1")
}

/// Call first thing, before GTK or WebKit start (and before other threads
/// exist: it sets an environment variable).
pub fn before_start() {
    if cfg!(target_os = "linux")
        && disable_compositing(
            std::env::var_os(DISABLE_COMPOSITING).is_some(),
            std::env::var_os(KEEP_COMPOSITING).as_deref(),
        )
    {
        std::env::set_var(DISABLE_COMPOSITING, "1");
    }
}

/// Settings of the created web view (the main window's).
#[cfg(target_os = "linux")]
pub fn tune<R: tauri::Runtime>(window: &tauri::WebviewWindow<R>) {
    let done = window.with_webview(|platform| {
        use webkit2gtk::{CacheModel, SettingsExt, WebContextExt, WebViewExt};
        let view = platform.inner();
        if let Some(context) = view.context() {
            context.set_cache_model(CacheModel::DocumentViewer);
        }
        if let Some(settings) = WebViewExt::settings(&view) {
            settings.set_enable_page_cache(false);
            settings.set_enable_webgl(false);
            settings.set_enable_webaudio(false);
        }
    });
    if let Err(e) = done {
        tracing::warn!("cannot tune the web view: {e}");
    }
}

#[cfg(not(target_os = "linux"))]
pub fn tune<R: tauri::Runtime>(_window: &tauri::WebviewWindow<R>) {}

#[cfg(test)]
mod tests {
    use super::disable_compositing;
    use std::ffi::OsStr;

    #[test]
    fn compositing_is_off_unless_the_user_chose() {
        assert!(disable_compositing(false, None));
        assert!(disable_compositing(false, Some(OsStr::new("0"))));
        assert!(!disable_compositing(false, Some(OsStr::new("1"))));
        assert!(!disable_compositing(true, None));
        assert!(!disable_compositing(true, Some(OsStr::new("0"))));
    }
}
