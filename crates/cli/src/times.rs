//! Instants as people read them: RFC 3339, in UTC by default (the table's clock, the same
//! for every reader), or with `--local-time` in this machine's time zone (TZ, else
//! /etc/localtime), each instant with the offset its zone had then.

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// `--local-time`, for the commands that print times for people.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub(crate) struct TimeArgs {
    /// Show times in this machine's time zone (with their UTC offset) instead of UTC.
    #[arg(long, global = true)]
    pub(crate) local_time: bool,
}

impl TimeArgs {
    pub(crate) fn times(self) -> Times {
        if self.local_time {
            Times::local()
        } else {
            Times::utc()
        }
    }
}

/// Where instants are shown.
#[derive(Debug, Clone)]
pub(crate) struct Times {
    /// `None`: UTC, written `Z`.
    zone: Option<TimeZone>,
}

impl Times {
    pub(crate) fn utc() -> Times {
        Times { zone: None }
    }

    /// The system's zone; UTC when it cannot be told (jiff falls back to UTC itself).
    pub(crate) fn local() -> Times {
        Times::in_zone(TimeZone::system())
    }

    pub(crate) fn in_zone(zone: TimeZone) -> Times {
        Times { zone: Some(zone) }
    }

    /// A protobuf timestamp, to the millisecond.
    pub(crate) fn of(&self, ts: &banco_wire::Timestamp) -> String {
        match Timestamp::new(ts.seconds, ts.nanos) {
            Ok(at) => self.show(at, 3),
            Err(_) => format!(
                "{}.{:09} (unix seconds, past the calendar)",
                ts.seconds, ts.nanos
            ),
        }
    }

    /// Unix seconds, to the second: `2026-12-01T19:26:22Z`.
    pub(crate) fn seconds(&self, seconds: i64) -> String {
        match Timestamp::from_second(seconds) {
            Ok(at) => self.show(at, 0),
            Err(_) => format!("{seconds} (unix seconds, past the calendar)"),
        }
    }

    /// `HH:MM:SS` of a protobuf timestamp in this zone, for a line that starts with the
    /// time of day (`player watch`).
    pub(crate) fn time_of_day(&self, ts: &banco_wire::Timestamp) -> String {
        let Ok(at) = Timestamp::new(ts.seconds, ts.nanos) else {
            return "--:--:--".to_owned();
        };
        let zone = self.zone.clone().unwrap_or(TimeZone::UTC);
        at.to_zoned(zone).strftime("%H:%M:%S").to_string()
    }

    /// The day `YYYY-MM-DD` in this zone, from its first instant to the next day's, in
    /// unix milliseconds (23 or 25 hours on the days the clocks change).
    pub(crate) fn day_ms(&self, day: &str) -> anyhow::Result<(u64, u64)> {
        let date: jiff::civil::Date = day
            .parse()
            .map_err(|e| anyhow::anyhow!("--day {day}: expected YYYY-MM-DD ({e})"))?;
        let zone = self.zone.clone().unwrap_or(TimeZone::UTC);
        let ms = |date: jiff::civil::Date| -> anyhow::Result<u64> {
            let at = date
                .to_zoned(zone.clone())
                .map_err(|e| anyhow::anyhow!("--day {day}: {e}"))?
                .timestamp()
                .as_millisecond();
            u64::try_from(at).map_err(|_| anyhow::anyhow!("--day {day}: before 1970"))
        };
        let next = date
            .tomorrow()
            .map_err(|e| anyhow::anyhow!("--day {day}: {e}"))?;
        Ok((ms(date)?, ms(next)?))
    }

    fn show(&self, at: Timestamp, digits: usize) -> String {
        match &self.zone {
            None => format!("{at:.digits$}"),
            Some(zone) => {
                let offset = zone.to_offset(at);
                format!("{:.digits$}", at.display_with_offset(offset))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_is_rfc_3339_with_z() {
        let t = Times::utc();
        assert_eq!(t.seconds(1_796_153_182), "2026-12-01T19:26:22Z");
        let ts = banco_wire::Timestamp {
            seconds: 1_796_153_182,
            nanos: 5_000_000,
        };
        assert_eq!(t.of(&ts), "2026-12-01T19:26:22.005Z");
        assert_eq!(t.time_of_day(&ts), "19:26:22");
        assert_eq!(
            t.seconds(i64::MAX),
            format!("{} (unix seconds, past the calendar)", i64::MAX)
        );
    }

    #[test]
    fn a_day_runs_from_its_midnight_to_the_next_in_the_zone() {
        assert_eq!(
            Times::utc().day_ms("2026-12-01").unwrap_or_default(),
            (1_796_083_200_000, 1_796_169_600_000)
        );
        let zone = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").expect("a POSIX TZ string");
        // The day summer time starts has 23 hours.
        let (start, end) = Times::in_zone(zone)
            .day_ms("2026-03-29")
            .unwrap_or_default();
        assert_eq!(start, 1_774_738_800_000);
        assert_eq!(end - start, 23 * 3_600_000);
        assert!(Times::utc().day_ms("2026-13-01").is_err());
    }

    #[test]
    fn local_time_carries_the_offset_of_that_instant() {
        // Central European time: +01:00 in winter, +02:00 in summer.
        let zone = TimeZone::posix("CET-1CEST,M3.5.0,M10.5.0/3").expect("a POSIX TZ string");
        let t = Times::in_zone(zone);
        assert_eq!(t.seconds(1_796_153_182), "2026-12-01T20:26:22+01:00");
        assert_eq!(t.seconds(1_783_000_000), "2026-07-02T15:46:40+02:00");
        let ts = banco_wire::Timestamp {
            seconds: 1_796_153_182,
            nanos: 0,
        };
        assert_eq!(t.time_of_day(&ts), "20:26:22");
    }
}
