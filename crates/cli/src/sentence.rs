//! An error as one line for a person: each cause after the context it explains, except a
//! cause the line already ends with. A library message that quotes its own source
//! (`clip folder x: {source}`, with the source also kept as the error's cause, as
//! `thiserror` does) would otherwise say the same thing twice.

/// `err` and its causes, joined by `: `, each said once.
pub(crate) fn sentence(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("clip folder /x: {source}")]
    struct Quoting {
        source: std::io::Error,
    }

    #[test]
    fn each_cause_once_after_its_context() {
        let err = anyhow::Error::new(Quoting {
            source: std::io::Error::other("disk full"),
        })
        .context("--clips-dir");
        assert_eq!(sentence(&err), "--clips-dir: clip folder /x: disk full");
        assert_eq!(
            format!("{err:#}"),
            "--clips-dir: clip folder /x: disk full: disk full"
        );

        let err = anyhow::anyhow!("not a URL")
            .context("server address `x`")
            .context("--server");
        assert_eq!(sentence(&err), "--server: server address `x`: not a URL");
    }
}
