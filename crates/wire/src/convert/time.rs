//! Instants: unix milliseconds in the domain, `google.protobuf.Timestamp` on the wire.

use crate::{ConversionError, Timestamp};

/// The wire timestamp of `ms` milliseconds since the epoch.
pub fn timestamp_of_ms(ms: u64) -> Timestamp {
    Timestamp {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        nanos: i32::try_from((ms % 1000) * 1_000_000).unwrap_or(0),
    }
}

/// Milliseconds since the epoch of the timestamp in `field`, refused before 1970 or with
/// nanos out of range.
pub fn ms_of_timestamp(field: &str, ts: &Timestamp) -> Result<u64, ConversionError> {
    let invalid =
        |why: &str| ConversionError::invalid(field, format!("{}s {}ns", ts.seconds, ts.nanos), why);
    if !(0..1_000_000_000).contains(&ts.nanos) {
        return Err(invalid("nanos are 0 to 999,999,999"));
    }
    let seconds = u64::try_from(ts.seconds).map_err(|_| invalid("before 1970"))?;
    Ok(seconds
        .saturating_mul(1000)
        .saturating_add(u64::try_from(ts.nanos / 1_000_000).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn milliseconds_go_out_and_come_back_and_bad_instants_name_the_field() {
        let ts = timestamp_of_ms(1_767_225_600_123);
        assert_eq!((ts.seconds, ts.nanos), (1_767_225_600, 123_000_000));
        assert_eq!(ms_of_timestamp("from", &ts).unwrap(), 1_767_225_600_123);
        let before = Timestamp {
            seconds: -1,
            nanos: 0,
        };
        assert_eq!(
            ms_of_timestamp("filter.from", &before).unwrap_err().field(),
            "filter.from"
        );
        let nanos = Timestamp {
            seconds: 1,
            nanos: -5,
        };
        assert!(ms_of_timestamp("to", &nanos).is_err());
    }
}
