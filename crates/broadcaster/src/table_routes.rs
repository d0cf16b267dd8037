//! TableService as served: every command for croupiers only; WatchTable, which changes
//! nothing, also for services (the camera's publisher draws the round on the picture).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use banco_auth::AuthInterceptor;
use banco_wire::pb::table_service_server::TableServiceServer;
use futures::future::BoxFuture;
use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::interceptor::InterceptedService;
use tower_service::Service;

use crate::table_service::TableServer;

const WATCH_TABLE: &str = "/banco.v1.TableService/WatchTable";

type Guarded = InterceptedService<TableServiceServer<TableServer>, AuthInterceptor>;

/// The TableService router: one interceptor for commands, a wider one for WatchTable.
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
    ) -> TableRoutes {
        TableRoutes {
            commands: InterceptedService::new(
                TableServiceServer::from_arc(Arc::clone(&server)),
                croupiers,
            ),
            watch: InterceptedService::new(TableServiceServer::from_arc(server), watchers),
        }
    }
}

impl NamedService for TableRoutes {
    const NAME: &'static str = <TableServiceServer<TableServer> as NamedService>::NAME;
}

impl Service<http::Request<Body>> for TableRoutes {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let mut service = if request.uri().path() == WATCH_TABLE {
            self.watch.clone()
        } else {
            self.commands.clone()
        };
        Box::pin(async move {
            let response = service.call(request).await?;
            Ok(response.map(Body::new))
        })
    }
}
