/**
 * A cap on the requests one connection has in flight (MEMGATE_MAX_PIPELINED; docs/configuration.md).
 *
 * Node's HTTP server parses every request of a chunk it reads and hands each one to the app at once; answers to
 * pipelined requests are queued in order, in memory, until the client reads them. One write of thousands of
 * `GET /metrics` from a client that never reads thus made thousands of answers at once (seconds of stalled event
 * loop, gigabytes of queued text). With the cap, the request that would be one too many cuts the connection: no
 * answer is made for it or for any request after it on that connection, and the answers queued for it are dropped.
 * An ordinary client (one request at a time per connection, or a few pipelined) never comes near the cap.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Logger } from "../logging/logger";

const IN_FLIGHT = Symbol("memgate.requestsInFlight");
type Counted = Socket & { [IN_FLIGHT]?: number };

/** `listener`, with at most `max` requests in flight per connection (0: no cap). */
export function limitPipelining(listener: RequestListener, max: number, logger: Logger): RequestListener {
  if (max <= 0) return listener;
  return function limitPipelining(req: IncomingMessage, res: ServerResponse) {
    const socket = req.socket as Counted;
    const inFlight = (socket[IN_FLIGHT] ?? 0) + 1;
    if (inFlight > max) {
      if (!socket.destroyed) {
        logger.warn({ maxPipelined: max }, "connection cut: too many pipelined requests in flight");
        socket.destroy();
      }
      return;
    }
    socket[IN_FLIGHT] = inFlight;
    res.on("close", () => {
      // (`on`: a response closes once; see src/telemetry/http-server.ts)
      socket[IN_FLIGHT] = (socket[IN_FLIGHT] ?? 1) - 1;
    });
    listener(req, res);
  };
}
