"""Cut off a stalled or trickling origin with a 504 page: the PageRank addon calls its hooks.

mitmproxy sets no deadline on an origin: one that accepts a request and then
says nothing (or sends its headers and then a byte now and then) holds the
client for as long as it likes, and an HTML page that the proxy buffers to
annotate shows the client nothing meanwhile.  Option ``pagerank_idle_timeout``
(seconds; 0 turns this off):

* the origin's response headers must come within that time of the request;
* a page the proxy holds back to annotate must then arrive whole within that
  time of its headers.  A response that streams through untouched (not HTML,
  or over ``pagerank_max_body``) is not timed: the client sees its bytes as
  they come.

It is an addon on its own too (its hooks are mitmproxy's), but the PageRank
addon calls them from its own hooks rather than registering it: mitmproxy
visits every addon at each of its events, about twenty a page, whether it
has a hook for the event or not, and as a second addon this one cost a page
more in those visits than in its own work.

Past it the client gets a 504 page that says which, and its connection is
closed (and with it the one to the origin), as mitmproxy's own inactivity
watchdog closes a silent connection.  A client speaking TLS to the proxy (an
https site) or HTTP/2 cannot be handed bytes from outside mitmproxy's layers:
its flow's stream is told that the origin failed with a 504, and mitmproxy
sends its own 504 page, with the same message, through those layers.
"""

from __future__ import annotations

import asyncio
import html
import logging

from mitmproxy import ctx, exceptions, http
from mitmproxy.proxy import events
from mitmproxy.proxy.layers.http import HttpLayer, ResponseProtocolError
from mitmproxy.utils import asyncio_utils

from .jobs import FlowState, mark, state_of

log = logging.getLogger(__name__)
IDLE_TIMEOUT = 60  # seconds: the option's default


def check_idle_timeout(seconds: int) -> int:
    """The option's value, or OptionsError."""
    if seconds < 0:
        raise exceptions.OptionsError("pagerank_idle_timeout must be 0 (no deadline) or more seconds")
    return seconds


class OriginDeadline:
    def __init__(self) -> None:
        self.timeout = 0
        # flow id -> (deadline on the loop's clock, flow, what the origin had not done, seconds): one timer for
        # them all, at the earliest, rather than one per flow (two a page, each a heap entry of the loop's)
        self._deadlines: dict[str, tuple[float, http.HTTPFlow, str, int]] = {}
        self._timer: asyncio.TimerHandle | None = None

    def load(self, loader) -> None:
        loader.add_option(
            "pagerank_idle_timeout",
            int,
            IDLE_TIMEOUT,
            "Seconds an origin may take to send its response headers, and then a page held back to be "
            "annotated to arrive whole; past them the client gets a 504 (0: no deadline).",
        )

    def configure(self, updated) -> None:
        if "pagerank_idle_timeout" in updated:
            self.timeout = check_idle_timeout(ctx.options.pagerank_idle_timeout)

    def request(self, flow: http.HTTPFlow) -> None:
        if not self.timeout or flow.response is not None or state_of(flow) is FlowState.OWN_PAGE:
            return  # answered already, or one of the proxy's own pages (the PageRank addon marks them)
        self._arm(flow, "sent no response")

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        self._disarm(flow)
        if self.timeout and flow.response is not None and not flow.response.stream and flow.live:
            self._arm(flow, "had not sent the whole page")

    def response(self, flow: http.HTTPFlow) -> None:
        self._disarm(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._disarm(flow)

    def done(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._deadlines.clear()

    def _arm(self, flow: http.HTTPFlow, what: str) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        self._deadlines[flow.id] = (deadline, flow, what, self.timeout)
        if self._timer is None or deadline < self._timer.when():  # (earlier only if the timeout was lowered)
            self._schedule(loop, deadline)

    def _disarm(self, flow: http.HTTPFlow) -> None:
        self._deadlines.pop(flow.id, None)

    def _schedule(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(deadline, self._sweep, loop)

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cut off every flow past its deadline; the timer then waits for the earliest one left."""
        self._timer = None
        now = loop.time()
        due = [key for key, (deadline, *_) in self._deadlines.items() if deadline <= now]
        for key in due:
            _, flow, what, seconds = self._deadlines.pop(key)
            self._expire(flow, what, seconds)
        if self._deadlines:
            self._schedule(loop, min(deadline for deadline, *_ in self._deadlines.values()))

    def _expire(self, flow: http.HTTPFlow, what: str, seconds: int) -> None:
        response = flow.response
        if not flow.live or flow.error is not None:
            return
        if response is not None and (response.stream or response.raw_content is not None):
            return  # streaming through, or whole and being annotated: the origin is done

        message = f"The site {what} within {seconds} s (the proxy's --idle-timeout), so the proxy gave up on it."
        log.info("pagerank: %s: %s", flow.request.url[:200], message)
        mark(flow, FlowState.CUT_OFF, f"cut off: the origin {what} within {seconds} s")
        _answer_and_close(flow, message)


def gateway_timeout(message: str) -> bytes:
    """A whole HTTP/1.1 504 response, ending the connection."""
    body = (
        "<!doctype html><meta charset=utf-8><title>504 Gateway Timeout</title>"
        f"<h1>504 Gateway Timeout</h1><p>{html.escape(message)}</p>"
    ).encode()
    head = (
        "HTTP/1.1 504 Gateway Timeout\r\n"
        "content-type: text/html; charset=utf-8\r\n"
        "content-security-policy: default-src 'none'\r\n"
        "cache-control: no-store\r\n"
        "connection: close\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    return head + body


def _answer_and_close(flow: http.HTTPFlow, message: str) -> None:
    """Answer the client with a 504 page that says ``message``, then end its connection.

    Nothing of this flow's response has reached the client (no headers yet, or
    a body held back whole), and earlier responses on the connection are
    complete, so the 504 is the next thing the client reads.  A plain HTTP/1
    client is written the page and its connection cancelled, as mitmproxy's
    watchdog does; a client over TLS or HTTP/2 can only be written to through
    mitmproxy's layers, so the flow's stream is told the origin failed with a
    504 (:class:`_GatewayTimeout`) and mitmproxy sends its own 504 page with
    the message.  This reaches into mitmproxy's connection handler and layers
    (pinned to mitmproxy 11): without them to reach, the flow is killed
    instead, which closes the connection.
    """
    server = ctx.master.addons.get("proxyserver")
    handler = getattr(server, "connections", {}).get(flow.client_conn.id)
    io = getattr(handler, "transports", {}).get(flow.client_conn) if handler is not None else None
    if io is None or io.handler is None:
        flow.kill()
        return
    plain = not flow.client_conn.tls_established and flow.request.http_version in ("HTTP/1.0", "HTTP/1.1")
    if plain and io.writer is not None:
        io.writer.write(gateway_timeout(message))
        io.handler.cancel("timeout")
        return
    stream = _http_stream(getattr(handler, "layer", None), flow)
    if stream is None:
        io.handler.cancel("timeout")
        return
    task = asyncio_utils.create_task(
        _answer_in_layers(handler, flow, _GatewayTimeout(flow, stream, message)),
        name="pagerank 504",
        client=flow.client_conn.peername,
    )
    _answering.add(task)
    task.add_done_callback(_answering.discard)


_answering: set[asyncio.Task] = set()  # the 504s on their way through mitmproxy's layers, kept from collection


async def _answer_in_layers(handler, flow: http.HTTPFlow, event: _GatewayTimeout) -> None:
    """Hand the 504 to the flow's stream, as mitmproxy hands it an injected message; then close the silent
    origin's connection, which the client's connection (kept by HTTP/2) would otherwise hold open."""
    await handler.server_event(event)
    origin = handler.transports.get(flow.server_conn)
    if origin is not None and origin.handler is not None:
        origin.handler.cancel("timeout")


class _GatewayTimeout(ResponseProtocolError, events.MessageInjected):
    """The origin's failure to answer in time, as mitmproxy's own HTTP layer reports a failed origin: its
    stream sends the client a 504 page through the client's layers (TLS, HTTP/2) and ends the flow.

    Injected as mitmproxy injects a message into a live flow (its HTTP layer routes one straight to the
    flow's stream), the one way into the middle of mitmproxy's layers from outside them."""

    def __init__(self, flow: http.HTTPFlow, stream_id: int, message: str) -> None:
        ResponseProtocolError.__init__(self, stream_id, message, 504)
        self.flow = flow


def _http_stream(root, flow: http.HTTPFlow) -> int | None:
    """The id of ``flow``'s stream in its HTTP layer (None: not found), searched down the layer stack.

    An https site's flows live in an HTTP layer below the tunnel of the
    CONNECT stream of the proxy's own HTTP layer, below its TLS layers; a
    mode layer hands its events to a child it keeps only as its handler."""
    below = [root]
    for _ in range(64):
        if not below:
            return None
        layer = below.pop()
        if isinstance(layer, HttpLayer):
            for key, stream in layer.streams.items():
                if getattr(stream, "flow", None) is flow:
                    return key
                below.append(getattr(stream, "child_layer", None))
        handler = getattr(layer, "_handle_event", None)
        below += [
            getattr(layer, "child_layer", None),
            getattr(layer, "layer", None),
            getattr(handler, "__self__", None) if getattr(handler, "__self__", layer) is not layer else None,
        ]
        below = [child for child in below if child is not None]
    return None
