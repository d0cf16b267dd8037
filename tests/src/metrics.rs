//! A service's `/metrics` over plain HTTP, and a strict reading of the text it returns:
//! every line a `# HELP`, `# TYPE` or `# UNIT` of a declared family, a sample of one, or
//! the final `# EOF`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;

/// `GET /metrics` from `addr`: the status line, the headers and the body.
pub fn get(addr: &str, path: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("{addr}: {e}"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: e2e\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("{addr}: {e}"));
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("{addr}: {e}"));
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no end of headers in {response:?}"));
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_owned(), headers.to_owned(), body.to_owned())
}

/// The samples of `/metrics` at `addr`, by `name{labels}` as written; panics naming the
/// first line that is not valid exposition text.
pub fn scrape(addr: &str) -> BTreeMap<String, f64> {
    let (status, headers, body) = get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK", "{headers}\n{body}");
    assert!(
        headers.contains("Content-Type: application/openmetrics-text"),
        "{headers}"
    );
    let length = headers
        .lines()
        .find_map(|h| h.strip_prefix("Content-Length: "))
        .and_then(|n| n.parse::<usize>().ok());
    assert_eq!(length, Some(body.len()), "Content-Length");
    parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"))
}

/// Checks `text` line by line; the samples by `name{labels}`.
pub fn parse(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut families: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = BTreeMap::new();
    let mut seen_eof = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if seen_eof {
            return Err(format!("line {n}: after # EOF: {line}"));
        }
        if line == "# EOF" {
            seen_eof = true;
            continue;
        }
        if let Some(rest) = line.strip_prefix("# ") {
            let mut parts = rest.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            if !is_name(name) {
                return Err(format!("line {n}: bad metric name: {line}"));
            }
            match kind {
                "TYPE" => {
                    let t = parts.next().unwrap_or("");
                    if ![
                        "counter",
                        "gauge",
                        "histogram",
                        "summary",
                        "unknown",
                        "info",
                    ]
                    .contains(&t)
                    {
                        return Err(format!("line {n}: bad type: {line}"));
                    }
                    if families.insert(name.to_owned(), t.to_owned()).is_some() {
                        return Err(format!("line {n}: family declared twice: {line}"));
                    }
                }
                "HELP" | "UNIT" => {}
                _ => return Err(format!("line {n}: unknown comment: {line}")),
            }
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .ok_or_else(|| format!("line {n}: no value: {line}"))?;
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v
                .parse()
                .map_err(|_| format!("line {n}: bad value `{v}`: {line}"))?,
        };
        let name = series.split('{').next().unwrap_or("");
        if !is_name(name) {
            return Err(format!("line {n}: bad sample name: {line}"));
        }
        if let Some(labels) = series.strip_prefix(name).filter(|l| !l.is_empty()) {
            check_labels(labels).map_err(|e| format!("line {n}: {e}: {line}"))?;
        }
        family_of(name, &families)
            .ok_or_else(|| format!("line {n}: sample of no declared family: {line}"))?;
        if samples.insert(series.to_owned(), value).is_some() {
            return Err(format!("line {n}: sample repeated: {line}"));
        }
    }
    if !seen_eof {
        return Err("no # EOF at the end".to_owned());
    }
    Ok(samples)
}

fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `{a="x",b="y"}` with escaped quotes allowed inside values.
fn check_labels(labels: &str) -> Result<(), String> {
    let inner = labels
        .strip_prefix('{')
        .and_then(|l| l.strip_suffix('}'))
        .ok_or("labels not in braces")?;
    let mut rest = inner;
    let mut names = BTreeSet::new();
    while !rest.is_empty() {
        let (name, after) = rest.split_once("=\"").ok_or("label without =\"")?;
        if !is_name(name) || !names.insert(name) {
            return Err(format!("bad or repeated label name `{name}`"));
        }
        let mut end = None;
        let mut escaped = false;
        for (i, c) in after.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    end = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let end = end.ok_or("unterminated label value")?;
        rest = &after[end + 1..];
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
    Ok(())
}

/// The declared family a sample belongs to (`x_total` of counter `x`, `x_bucket` of
/// histogram `x`, ...).
fn family_of<'a>(name: &str, families: &'a BTreeMap<String, String>) -> Option<&'a String> {
    families.get(name).or_else(|| {
        ["_total", "_created", "_bucket", "_count", "_sum", "_info"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix).and_then(|f| families.get(f)))
    })
}

/// The value of `series` (`name{labels}` as the service writes it), 0 when absent.
pub fn value(samples: &BTreeMap<String, f64>, series: &str) -> f64 {
    samples.get(series).copied().unwrap_or(0.0)
}

/// The sum of every sample whose series starts with `prefix`.
pub fn sum(samples: &BTreeMap<String, f64>, prefix: &str) -> f64 {
    samples
        .iter()
        .filter(|(k, _)| k.starts_with(prefix))
        .map(|(_, v)| v)
        .sum()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn good_text_parses_and_bad_text_is_named() {
        let good =
            "# HELP a_b Things.\n# TYPE a_b counter\na_b_total{x=\"1\",y=\"q\\\"\"} 3\n# EOF\n";
        assert_eq!(parse(good).unwrap()["a_b_total{x=\"1\",y=\"q\\\"\"}"], 3.0);
        for bad in [
            "a 1\n# EOF\n",
            "# TYPE a counter\na_total x\n# EOF\n",
            "# TYPE a counter\na_total 1\n",
            "# TYPE a counter\na_total{x=1} 1\n# EOF\n",
            "# TYPE a counter\n# TYPE a gauge\n# EOF\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
