//! `[disk]`: the data dir's free-space floor and reserve (the engine's
//! `disk` module watches them).

use overseer_contain::limits::ByteSize;
use serde::{Deserialize, Serialize};

/// `[disk]` in `overseer.toml`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiskConfig {
    /// Runs pause below this much free space (default 256 MiB).
    pub floor: Option<ByteSize>,
    /// The room kept for the engine's own records (default 32 MiB).
    pub reserve: Option<ByteSize>,
}

impl DiskConfig {
    pub fn is_default(&self) -> bool {
        *self == DiskConfig::default()
    }
    pub fn floor(&self) -> u64 {
        self.floor.map_or(256 << 20, |b| b.0)
    }
    pub fn reserve(&self) -> u64 {
        self.reserve.map_or(32 << 20, |b| b.0)
    }
}
