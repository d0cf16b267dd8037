//! Why a config file is refused, and why printing failed.

/// A config file refused: every variant but [`ConfigError::NotToml`] names the key.
/// Keys are shown escaped, so that one holding a newline or a quote stays on its line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("not valid TOML: {0}")]
    NotToml(String),
    #[error(
        "unknown key `{}` (`banco {service} --print-config` shows every key)",
        .key.escape_debug()
    )]
    UnknownKey { key: String, service: String },
    #[error("`{}`: {why}", .key.escape_debug())]
    BadValue { key: String, why: String },
    #[error("`{}` cannot be used with {with}", .key.escape_debug())]
    Conflict { key: String, with: String },
}

impl ConfigError {
    /// The key refused; `None` when the text is not TOML at all.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::NotToml(_) => None,
            ConfigError::UnknownKey { key, .. }
            | ConfigError::BadValue { key, .. }
            | ConfigError::Conflict { key, .. } => Some(key),
        }
    }
}

/// The effective settings could not be written as TOML.
#[derive(Debug, thiserror::Error)]
#[error("could not print the configuration as TOML: {0}")]
pub struct PrintError(#[from] toml::ser::Error);
