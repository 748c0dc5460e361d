//! Scaffolding commands: each turns validated options into a [`ChangeSet`](crate::changeset::ChangeSet)
//! without touching the disk; the CLI decides whether to write it or only show it (`--dry-run`).

pub mod adopt;
pub mod api;
mod cluster_role;
mod conversion;
pub mod delete_api;
pub mod delete_webhook;
pub(crate) mod derived;
mod edit;
pub mod init;
mod kind;
mod uses;
pub mod webhook;

use std::time::{SystemTime, UNIX_EPOCH};

/// The year for copyright headers. `SOURCE_DATE_EPOCH` (the reproducible-builds convention)
/// overrides the clock, so output can be byte-identical across runs.
pub fn current_year() -> i64 {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        });
    year_of_unix_day(seconds.div_euclid(86_400))
}

/// Civil year of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn year_of_unix_day(days: i64) -> i64 {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    yoe + era * 400 + i64::from(month <= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn years() {
        assert_eq!(year_of_unix_day(0), 1970);
        assert_eq!(year_of_unix_day(365), 1971);
        // 2024-12-31 and 2025-01-01
        assert_eq!(year_of_unix_day(20_088), 2024);
        assert_eq!(year_of_unix_day(20_089), 2025);
        // 2026-11-29
        assert_eq!(year_of_unix_day(20_786), 2026);
    }
}
