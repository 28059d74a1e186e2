//! `zpulse-capture.toml`: what system a capture comes from and when it was taken.

use super::CaptureError;
use serde::{Deserialize, Serialize};
use std::path::Path;
use zpulse_proto::snapshot::Os;

pub const MANIFEST: &str = "zpulse-capture.toml";
/// The capture layout this zpulse writes and reads (v1).
pub(super) const FORMAT: u32 = 1;
/// A manifest is a few short lines; anything bigger (a link to `/dev/zero`…) is refused.
const MAX_MANIFEST_BYTES: u64 = 64 << 10;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    pub os: Os,
    /// Unix seconds, with fraction.
    pub captured_at: f64,
    #[serde(default)]
    pub hostname: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zfs_version: Option<String>,
}

impl Manifest {
    pub fn read(dir: &Path) -> Result<Manifest, CaptureError> {
        let path = dir.join(MANIFEST);
        let bytes =
            crate::sources::root::read_regular(&path, MAX_MANIFEST_BYTES).map_err(|error| {
                CaptureError::Io {
                    path: path.clone(),
                    error,
                }
            })?;
        let text = String::from_utf8(bytes).map_err(|e| CaptureError::Manifest {
            path: path.clone(),
            message: format!("not UTF-8 text: {e}"),
        })?;
        let manifest: Manifest = toml::from_str(&text).map_err(|e| CaptureError::Manifest {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if manifest.format != FORMAT {
            return Err(CaptureError::Manifest {
                path,
                message: format!(
                    "capture format {} is not supported (this zpulse reads format {FORMAT})",
                    manifest.format
                ),
            });
        }
        if !manifest.captured_at.is_finite() {
            return Err(CaptureError::Manifest {
                path,
                message: "captured_at is not a number of seconds".into(),
            });
        }
        Ok(manifest)
    }

    pub fn to_toml(&self) -> String {
        // Serializing a struct of plain fields cannot fail.
        toml::to_string(self).unwrap_or_default()
    }
}
