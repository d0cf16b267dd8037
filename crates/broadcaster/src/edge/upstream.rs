//! The broadcasters an edge forwards to: one channel per broadcaster (HTTP/2 carries
//! every call to it), made when first needed, over TLS trusting the edge's upstream CA for
//! an `https://` owner.

use std::collections::HashMap;
use std::sync::Mutex;

use banco_auth::ClientTls;
use banco_wire::pb::player_service_client::PlayerServiceClient;
use tonic::Status;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::transport::Channel;

/// Channels to the broadcasters, by URL.
#[derive(Debug)]
pub(crate) struct Upstreams {
    tls: Option<ClientTls>,
    channels: Mutex<HashMap<String, Channel>>,
}

impl Upstreams {
    pub(crate) fn new(tls: Option<ClientTls>) -> Upstreams {
        Upstreams {
            tls,
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// A PlayerService client of the broadcaster at `owner`.
    pub(crate) fn client(&self, owner: &str) -> Result<PlayerServiceClient<Channel>, Status> {
        let mut channels = self
            .channels
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(channel) = channels.get(owner) {
            return Ok(PlayerServiceClient::new(channel.clone()));
        }
        let unreachable = |why: String| {
            Status::unavailable(format!(
                "the table's broadcaster ({owner}) cannot be reached: {why}"
            ))
        };
        let endpoint = banco_auth::client::endpoint_by_scheme(owner, self.tls.as_ref())
            .map_err(|e| unreachable(e.to_string()))?
            .connect_timeout(std::time::Duration::from_secs(2))
            .tcp_nodelay(true);
        let channel = endpoint.connect_lazy();
        channels.insert(owner.to_owned(), channel.clone());
        Ok(PlayerServiceClient::new(channel))
    }
}

/// `message` as a request in the name of the caller whose `authorization` is `token`.
pub(crate) fn as_caller<T>(message: T, token: &MetadataValue<Ascii>) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", token.clone());
    request
}
