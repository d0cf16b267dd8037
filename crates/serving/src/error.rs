//! Why a server could not start or stopped, for every banco service.

/// Why a server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Plaintext asked for beyond loopback.
    #[error(transparent)]
    Policy(#[from] banco_auth::TransportPolicyError),
    #[error("could not read the listening address: {0}")]
    Address(#[source] std::io::Error),
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// What the service itself sets up as it starts could not be (the broadcaster's tables
    /// and threads, the archive's clip folder): the service's own error, as it says it.
    #[error(transparent)]
    Service(Box<dyn std::error::Error + Send + Sync + 'static>),
}

impl ServeError {
    /// A service's own start-up error.
    pub fn service(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        ServeError::Service(error.into())
    }
}
