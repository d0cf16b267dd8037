//! Everything that can go wrong in a pipeline, named so that an operator knows what to
//! install or fix.

/// Why a pipeline could not be built, started or run to its end.
#[derive(Debug, thiserror::Error)]
pub enum StreamingError {
    #[error("GStreamer could not be initialised: {0}")]
    Init(String),
    /// A plugin is not installed; `package` says where Debian ships it.
    #[error("GStreamer element `{element}` is not installed (Debian package {package})")]
    MissingElement {
        element: &'static str,
        package: &'static str,
    },
    #[error("could not assemble the pipeline: {0}")]
    Build(String),
    #[error("the pipeline refused to change to {state}: {detail}")]
    StateChange { state: &'static str, detail: String },
    /// An error message on the pipeline's bus.
    #[error("{element}: {message}{}", debug.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Pipeline {
        element: String,
        message: String,
        debug: Option<String>,
    },
    #[error("configuration: {0}")]
    Config(String),
    #[error("the pipeline did not finish within {0:?}")]
    Timeout(std::time::Duration),
    #[error("an access unit was refused: {0}")]
    BadUnit(String),
    /// A file that is not the MP4 it should be, with what is wrong in it.
    #[error("{path}: {problem}")]
    BadMp4 { path: String, problem: String },
}

impl StreamingError {
    /// True when the error only says that an optional plugin is absent: tests skip on it.
    pub fn is_missing_element(&self) -> bool {
        matches!(self, StreamingError::MissingElement { .. })
    }
}
