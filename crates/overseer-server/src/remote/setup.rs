//! Adding, upgrading and removing hosts: what `overseer hosts add|upgrade|
//! remove` and the window's Settings -> Hosts both do, told step by step.

use serde::{Deserialize, Serialize};

/// One step of adding, upgrading or removing host `host`, as it happens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostSetupStep {
    pub host: String,
    /// What was done or found, said for the user ("copied overseer 0.1.0
    /// to ...", "the host lacks slirp4netns ...").
    pub line: String,
}

/// Host `host` was forgotten: its link is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS)]
pub struct HostRemoved {
    pub host: String,
}
