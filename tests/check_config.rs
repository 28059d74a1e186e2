//! `zpulse check-config` on the shipped checks (the real binary and `libzpulse_checks.so`):
//! each check's table validated as its load would validate it, at the file, line and key of
//! the failure; a table or a `disable` entry that names no plugin found, and a table no
//! plugin could be loaded to check, refused and said so. The bad values come from each
//! check's settings as docs/checks/ states them (its rules: a percentage, a clear level at
//! most its raise level, …).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use zpulse_tests::{CHECKS_LIBRARY, CHECKS_PACKAGE, SHIPPED_CHECKS, build_into_test_target};

/// For each shipped check: a setting and a value that its rules refuse, and words of the
/// reason. The last is refused by the check's own `build` (not a declared rule).
const REFUSED: [(&str, &str, &str); 9] = [
    (
        "pool-health",
        "capacity_clear_pct = 85",
        "must be at most capacity_warn_pct (80)",
    ),
    ("zevents", "quiet_after = \"0s\"", "must be at least 1"),
    ("layout", "raidz1_max_width = 1", "must be at least 2"),
    (
        "hdd-saturation",
        "mean_util_clear_pct = 70",
        "must be at most mean_util_pct (60)",
    ),
    (
        "arc-sizing",
        "pinned_clear_pct = 98",
        "must be at most pinned_pct (97)",
    ),
    (
        "special-fill",
        "critical_days = 40",
        "must be at most warn_days (30)",
    ),
    (
        "slog-usage",
        "full_pct = 120",
        "must be a percentage from 0 to 100",
    ),
    (
        "l2arc-value",
        "marginal_share_pct = 6",
        "must be at most worth_share_pct (5)",
    ),
    ("special-fill", "min_samples = 1", "must be at least 2"),
];

struct Setup {
    zpulse: PathBuf,
    dir: tempfile::TempDir,
    library: PathBuf,
}

fn setup() -> Setup {
    let profile = build_into_test_target(&[CHECKS_PACKAGE]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let library = dir.path().join(CHECKS_LIBRARY);
    std::fs::copy(profile.join(CHECKS_LIBRARY), &library).unwrap();
    std::fs::set_permissions(&library, std::fs::Permissions::from_mode(0o644)).unwrap();
    Setup {
        zpulse: profile.join("zpulse"),
        dir,
        library,
    }
}

impl Setup {
    /// check-config on `[plugins]` loading `library` only, then `rest`.
    fn check(&self, library: &Path, plugins_extra: &str, rest: &str) -> (Output, String) {
        let config = self.dir.path().join("zpulse.toml");
        std::fs::write(
            &config,
            format!(
                "[plugins]\ndirs = []\npaths = [{:?}]\n{plugins_extra}{rest}[history]\n\
                 enabled = false\n",
                library.display().to_string()
            ),
        )
        .unwrap();
        let out = Command::new(&self.zpulse)
            .args(["check-config", "--config"])
            .arg(&config)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out, err)
    }
}

#[test]
fn each_checks_own_rules_fail_check_config_at_the_keys_line() {
    let s = setup();
    for (check, line, why) in REFUSED {
        // The key is on line 5: [plugins], dirs, paths, the table's header, the key.
        let (out, err) = s.check(&s.library, "", &format!("[plugins.{check}]\n{line}\n"));
        assert_eq!(out.status.code(), Some(1), "{check}: {line}: {err}");
        let key = line.split(' ').next().unwrap();
        let at = format!("zpulse.toml:5: plugins.{check}.{key}: ");
        assert!(
            err.contains(&at) && err.contains(why),
            "{check}: {line}: {err}"
        );
    }
    // Each check with its defaults written out passes.
    for check in SHIPPED_CHECKS {
        let (out, err) = s.check(&s.library, "", &format!("[plugins.{check}]\n"));
        assert!(out.status.success(), "{check}: {err}");
    }
}

#[test]
fn a_misspelt_table_names_no_plugin_and_check_config_says_which_it_may_be() {
    let s = setup();
    for check in SHIPPED_CHECKS {
        // One letter dropped from the middle of the name.
        let mut misspelt = check.to_string();
        misspelt.remove(check.len() / 2);
        let (out, err) = s.check(&s.library, "", &format!("[plugins.{misspelt}]\nx = 1\n"));
        assert_eq!(out.status.code(), Some(1), "{misspelt}: {err}");
        assert!(
            err.contains(&format!(
                "zpulse.toml:4: plugins.{misspelt}: no plugin is called"
            )) && err.contains(&format!("did you mean {check:?}?")),
            "{misspelt}: {err}"
        );
    }
}

#[test]
fn disable_naming_no_plugin_fails_at_its_line() {
    let s = setup();
    let (out, err) = s.check(
        &s.library,
        "disable = [\n  \"layout\",\n  \"l2arc-valu\",\n]\n",
        "",
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    // Line 6: [plugins], dirs, paths, `disable = [`, "layout", then the misspelt one.
    assert!(
        err.contains("zpulse.toml:6: plugins.disable[1]: no plugin is called \"l2arc-valu\"")
            && err.contains("did you mean \"l2arc-value\"?"),
        "{err}"
    );
    assert!(!err.contains("disable[0]"), "{err}");
    // Every shipped check's name is known to `disable`.
    let all: Vec<String> = SHIPPED_CHECKS.iter().map(|c| format!("{c:?}")).collect();
    let (out, err) = s.check(&s.library, &format!("disable = [{}]\n", all.join(", ")), "");
    assert!(out.status.success(), "{err}");
}

#[test]
fn a_table_no_plugin_could_be_loaded_to_check_is_refused_and_says_so() {
    let s = setup();
    let missing = s.dir.path().join("libgone.so");
    let (out, err) = s.check(
        &missing,
        "",
        "[plugins.hdd-saturation]\nsaturation_pct = \"high\"\n",
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "zpulse.toml:4: plugins.hdd-saturation: no plugin could be loaded to check it"
        ) && err.contains("libgone.so"),
        "{err}"
    );
}
