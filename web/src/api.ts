// The player API: PlayerService over gRPC-Web, to the broadcaster that served the page.

import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createGrpcWebTransport } from "@connectrpc/connect-web";
import { PlayerService } from "./gen/banco/v1/player_pb.js";

export type Api = Client<typeof PlayerService>;

/** A client whose every call carries `token` (kept by the caller, in memory only). */
export function connect(token: string): Api {
  const bearer: Interceptor = (next) => async (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
  const transport = createGrpcWebTransport({
    baseUrl: window.location.origin,
    useBinaryFormat: true,
    interceptors: [bearer],
  });
  return createClient(PlayerService, transport);
}

/** A fresh idempotency key for one money request. */
export function freshKey(): string {
  return crypto.randomUUID();
}
