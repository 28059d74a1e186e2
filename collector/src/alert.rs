//! Alerting: findings raised and cleared at or above a severity go to Prometheus
//! Alertmanager (API v2) and to webhooks.

use serde::Deserialize;
use std::path::Path;
use std::time::Duration;

/// `[alerting]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alerting {
    /// `http://HOST:PORT` of an Alertmanager; alerts are POSTed to `/api/v2/alerts`.
    pub alertmanager: Option<String>,
    /// Findings at this severity rank or worse are sent (0 info, 1 warning, 2 critical).
    pub min_severity: i64,
    /// Active alerts are sent again this often (Alertmanager resolves alerts not re-sent).
    pub resend_every: Duration,
}

impl Default for Alerting {
    fn default() -> Alerting {
        Alerting {
            alertmanager: None,
            min_severity: 1,
            resend_every: Duration::from_secs(60),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlertingFile {
    alertmanager: Option<String>,
    min_severity: Option<String>,
    resend_every: Option<String>,
}

impl AlertingFile {
    pub fn resolve(self, _base: &Path) -> Result<Alerting, String> {
        let mut a = Alerting {
            alertmanager: self.alertmanager,
            ..Alerting::default()
        };
        if let Some(s) = self.min_severity {
            a.min_severity = crate::store::parse_severity(&s)
                .map_err(|e| format!("alerting.min_severity: {e}"))?;
        }
        if let Some(s) = self.resend_every {
            a.resend_every = crate::config::parse_duration(&s)
                .map_err(|e| format!("alerting.resend_every: {e}"))?;
        }
        Ok(a)
    }
}
