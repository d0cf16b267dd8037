//! The caller's deadline, its `grpc-timeout` header: a call not answered by then is
//! answered DEADLINE_EXCEEDED and its handler dropped, as tonic's own server does, so a
//! caller that gave up is told why instead of holding a stream open. A command already
//! handed to the table still goes through: resent with its id, it gets its answer.

use std::time::Duration;

use tonic::Status;

const HEADER: &str = "grpc-timeout";

/// Most digits the gRPC spec allows in a timeout.
const MAX_DIGITS: usize = 8;

/// The deadline `headers` ask for: `None` without one; a header that is not a gRPC
/// timeout (1 to 8 digits, then one of `H M S m u n`) is refused, naming it.
pub(crate) fn of(headers: &http::HeaderMap) -> Result<Option<Duration>, Status> {
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let refuse = |why: &str| {
        Status::invalid_argument(format!(
            "{HEADER} `{}`: {why}",
            String::from_utf8_lossy(value.as_bytes())
        ))
    };
    let text = value.to_str().map_err(|_| refuse("not ASCII text"))?;
    let Some(unit) = text.chars().last() else {
        return Err(refuse("empty"));
    };
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > MAX_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(refuse("must be 1 to 8 digits and a unit"));
    }
    // At most 8 digits: no overflow.
    let amount = digits
        .bytes()
        .fold(0_u64, |n, digit| n * 10 + u64::from(digit - b'0'));
    let timeout = match unit {
        'H' => Duration::from_secs(amount * 3600),
        'M' => Duration::from_secs(amount * 60),
        'S' => Duration::from_secs(amount),
        'm' => Duration::from_millis(amount),
        'u' => Duration::from_micros(amount),
        'n' => Duration::from_nanos(amount),
        _ => return Err(refuse("the unit must be one of H M S m u n")),
    };
    Ok(Some(timeout))
}

/// What a call past its deadline is answered.
pub(crate) fn exceeded(timeout: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "not answered within the caller's {HEADER} of {timeout:?}"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(value: &str) -> Result<Option<Duration>, String> {
        let mut headers = http::HeaderMap::new();
        headers.insert(HEADER, value.parse().unwrap());
        of(&headers).map_err(|s| s.message().to_owned())
    }

    #[test]
    fn every_unit_and_the_limits() {
        let cases = [
            ("1H", Duration::from_secs(3600)),
            ("2M", Duration::from_secs(120)),
            ("30S", Duration::from_secs(30)),
            ("250m", Duration::from_millis(250)),
            ("99999999u", Duration::from_micros(99_999_999)),
            ("5n", Duration::from_nanos(5)),
            ("0m", Duration::ZERO),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text), Ok(Some(want)), "{text}");
        }
        assert_eq!(of(&http::HeaderMap::new()).unwrap(), None);
    }

    #[test]
    fn a_malformed_timeout_is_refused_by_name() {
        for (text, why) in [
            ("", "empty"),
            ("m", "1 to 8 digits"),
            ("123456789m", "1 to 8 digits"),
            ("-5S", "1 to 8 digits"),
            ("1 S", "1 to 8 digits"),
            ("10s", "the unit must be one of"),
            ("10", "the unit must be one of"),
        ] {
            let refused = parse(text).unwrap_err();
            assert!(
                refused.starts_with(&format!("grpc-timeout `{text}`")) && refused.contains(why),
                "{text}: {refused}"
            );
        }
    }
}
