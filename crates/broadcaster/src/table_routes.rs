//! TableService as served: every command for croupiers only; WatchTable and GetTable, which
//! change nothing, also for services (the camera's publisher draws the round on the
//! picture).

use std::sync::Arc;

use banco_auth::AuthInterceptor;
use banco_wire::pb::table_service_server::TableServiceServer;
use tonic::body::Body;
use tonic::service::interceptor::InterceptedService;

use crate::routing::{RouteFuture, forward};
use crate::table_service::TableServer;

const WATCH_TABLE: &str = "/banco.v1.TableService/WatchTable";
const GET_TABLE: &str = "/banco.v1.TableService/GetTable";

type Guarded = InterceptedService<TableServiceServer<TableServer>, AuthInterceptor>;

/// The TableService router: one interceptor for commands, a wider one for the reads.
#[derive(Clone)]
pub(crate) struct TableRoutes {
    commands: Guarded,
    watch: Guarded,
}

impl TableRoutes {
    pub(crate) fn new(
        server: Arc<TableServer>,
        croupiers: AuthInterceptor,
        watchers: AuthInterceptor,
        max_request_bytes: usize,
    ) -> TableRoutes {
        let service = |server| {
            TableServiceServer::from_arc(server).max_decoding_message_size(max_request_bytes)
        };
        TableRoutes {
            commands: InterceptedService::new(service(Arc::clone(&server)), croupiers),
            watch: InterceptedService::new(service(server), watchers),
        }
    }
}

crate::routing::routed_service!(TableRoutes, TableServiceServer<TableServer>);

impl TableRoutes {
    fn route(&mut self, request: http::Request<Body>) -> RouteFuture {
        let service = if matches!(request.uri().path(), WATCH_TABLE | GET_TABLE) {
            self.watch.clone()
        } else {
            self.commands.clone()
        };
        forward(service, request)
    }
}
