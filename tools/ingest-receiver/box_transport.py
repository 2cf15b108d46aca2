"""The Virtues box's transport for receiver.py --generation box: HTTP/1.1 over iroh.

Loaded only in box mode, because it needs the PyPI package `iroh` (the iroh-ffi
bindings, 1.2.0); every other mode of the receiver needs the standard library only.

What it plays (virtues-os/virtues, crates/virtues-iroh, releases of 2026-09):

- One iroh endpoint, minimal preset, relay disabled, bound to HOST:PORT, accepting the
  single ALPN `virtues/http/1` (endpoint.rs).
- A connection whose proven remote key is not allowlisted is closed before any HTTP
  with application code 1 and reason `not allowlisted` (server.rs, HttpHandler::accept).
  The allowlist is asked at accept time only: a device forgotten later keeps the
  connections it has (its requests then fail the key check, 401), as on the box.
- Every bidirectional stream the peer opens is one HTTP/1.1 connection, as hyper serves
  it (server.rs: `http1::Builder::new().serve_connection(join(recv, send), ...)`):
  requests are read head first, then a Content-Length (or chunked) body; the answer is
  written with `connection: close` when the request asked for it (the stream is then
  finished), otherwise the stream stays open for the next request (keep-alive), and a
  clean end of the peer's sending side between requests finishes it.
- A peer that finishes its sending side while a request is being served (before the
  answer is written) gets no answer at all: hyper, without half-close, errors out of
  the connection and drops the service future, and the dropped QUIC send stream ends
  empty (client.rs: "Do NOT finish() the send half before reading ... the server's
  hyper ... then aborts before responding").

The box's routes are not here: `app` (receiver.py's BoxApp) answers each request.
"""

import asyncio
import datetime
import os
import platform
import sys
import threading
from email.utils import format_datetime
from http import HTTPStatus

# The iroh package as scripts/fetch-iroh.sh unpacks it from the pinned wheel
# (.iroh/<arch>/python), else one installed for this python3 (pip install iroh==1.2.0).
_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "")
_UNPACKED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".iroh", _ARCH, "python")
if _ARCH and os.path.isdir(os.path.join(_UNPACKED, "iroh")):
    sys.path.insert(0, os.path.normpath(_UNPACKED))

import iroh  # noqa: E402

ALPN = b"virtues/http/1"
MAX_HEAD_BYTES = 400 * 1024  # hyper's default read buffer limit
READ_CHUNK = 256 * 1024


class Incomplete(Exception):
    """The peer's sending side ended (or was reset) in the middle of a request."""


class Malformed(Exception):
    """A request hyper would refuse with 400."""


class Request:
    """One HTTP/1.1 request read from a stream."""

    def __init__(self, method, target, version, headers, body, wire_bytes, peer, connection_id, stream):
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers  # [(name, value)], names as sent
        self.body = body
        self.wire_bytes = wire_bytes
        self.peer = peer  # the proven remote EndpointId, 64 lower-case hex (its Display)
        self.connection_id = connection_id
        self._stream = stream

    def header(self, name):
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def client_finished(self):
        """True once the peer has ended its sending side (or reset it)."""
        return self._stream.eof

    def client_reset(self):
        return self._stream.error is not None

    @property
    def keep_alive(self):
        connection = (self.header("Connection") or "").lower()
        tokens = {t.strip() for t in connection.split(",")}
        if self.version == "HTTP/1.0":
            return "keep-alive" in tokens
        return "close" not in tokens


class Answer:
    """What the app answers: an HTTP response, or one of the transport's refusals."""

    def __init__(self, status=None, headers=None, body=b"", action="answer"):
        self.status = status
        self.headers = headers or []
        self.body = body
        self.action = action  # answer | abort (end the stream empty) | reset (RESET_STREAM)


ABORT = Answer(action="abort")
RESET = Answer(action="reset")


class _StreamReader:
    """Pumps one QUIC receive stream into a buffer, noting its end."""

    def __init__(self, recv):
        self.recv = recv
        self.buffer = bytearray()
        self.eof = False
        self.error = None
        self.changed = asyncio.Event()
        self.task = asyncio.ensure_future(self._pump())

    async def _pump(self):
        try:
            while True:
                chunk = await self.recv.read(READ_CHUNK)
                if not chunk:
                    break
                self.buffer += chunk
                self.changed.set()
        except iroh.IrohError as error:  # reset by the peer, or the connection went away
            self.error = error
        except asyncio.CancelledError:
            raise
        finally:
            self.eof = True
            self.changed.set()

    async def _more(self):
        """Waits for more data or the end; False at the end."""
        if self.eof:
            return False
        self.changed.clear()
        await self.changed.wait()
        return True

    async def wait_end(self, timeout):
        if self.eof or timeout <= 0:
            return self.eof
        try:
            await asyncio.wait_for(asyncio.shield(self.task), timeout)
        except asyncio.TimeoutError:
            pass
        return self.eof

    async def read_request(self):
        """The next request's (head lines, body, wire bytes), or None when the peer ended
        its sending side cleanly before a new request began."""
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end >= 0:
                break
            if len(self.buffer) > MAX_HEAD_BYTES:
                raise Malformed(431)
            if not await self._more() and self.buffer.find(b"\r\n\r\n") < 0:
                if not self.buffer and self.error is None:
                    return None
                raise Incomplete()
        head = bytes(self.buffer[:end]).decode("latin-1")
        del self.buffer[:end + 4]
        wire = end + 4
        lines = head.split("\r\n")
        request_line = lines[0].split(" ")
        if len(request_line) != 3 or not request_line[2].startswith("HTTP/1."):
            raise Malformed(400)
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise Malformed(400)
            headers.append((name, value.strip()))
        lookup = {k.lower(): v for k, v in headers}
        if "chunked" in lookup.get("transfer-encoding", "").lower():
            body, used = await self._read_chunked()
        else:
            length = lookup.get("content-length", "0")
            if not length.isdigit():
                raise Malformed(400)
            length = int(length)
            while len(self.buffer) < length:
                if not await self._more() and len(self.buffer) < length:
                    raise Incomplete()
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
            used = length
        return request_line, headers, body, wire + used

    async def _read_chunked(self):
        body = bytearray()
        used = 0
        while True:
            while self.buffer.find(b"\r\n") < 0:
                if not await self._more() and self.buffer.find(b"\r\n") < 0:
                    raise Incomplete()
            line_end = self.buffer.find(b"\r\n")
            size_text = bytes(self.buffer[:line_end]).split(b";")[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise Malformed(400) from None
            need = line_end + 2 + size + 2
            if size == 0:
                # the last chunk, optional trailers, then an empty line
                while self.buffer.find(b"\r\n\r\n", line_end) < 0:
                    if not await self._more() and self.buffer.find(b"\r\n\r\n", line_end) < 0:
                        raise Incomplete()
                stop = self.buffer.find(b"\r\n\r\n", line_end)
                used += stop + 4
                del self.buffer[:stop + 4]
                return bytes(body), used
            while len(self.buffer) < need:
                if not await self._more() and len(self.buffer) < need:
                    raise Incomplete()
            body += self.buffer[line_end + 2:line_end + 2 + size]
            used += need
            del self.buffer[:need]


class BoxTransport:
    """The box's iroh endpoint, run on its own thread with its own event loop.

    `app` provides:
      allowed(peer_hex) -> bool              the transport allowlist (asked per connection)
      async handle(request) -> Answer        one request
      noted_aborted(request)                 a request abandoned because the peer ended early
      noted_refused(peer_hex)                a connection closed as not allowlisted
      common_headers(request) -> [(k, v)]    headers every answer carries
      fin_grace() -> seconds                 how long to look for an early end before serving
      stopping: threading.Event
    """

    def __init__(self, app, host, port, secret_key):
        self.app = app
        self.host = host
        self.port = port
        self.secret_key = secret_key
        self.loop = None
        self.endpoint = None
        self.thread = None
        self.connections = {}  # peer hex -> set of live iroh Connection objects
        self.ready = threading.Event()
        self.failure = None
        self.info = None

    # -- life

    def start(self, timeout=30):
        self.thread = threading.Thread(target=self._run, name="box-iroh", daemon=True)
        self.thread.start()
        if not self.ready.wait(timeout):
            raise RuntimeError("the iroh endpoint did not bind in time")
        if self.failure is not None:
            raise RuntimeError(f"the iroh endpoint did not bind: {self.failure}")
        return self.info

    def _run(self):
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
            # Streams still being served end with the endpoint: let their tasks wind down
            # before the loop closes (iroh calls back into the loop for each pending read).
            pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
            for task in pending:
                task.cancel()
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        finally:
            self.loop.close()

    async def _main(self):
        try:
            options = iroh.EndpointOptions(
                preset=iroh.preset_minimal(), bind_addr=f"{self.host}:{self.port}",
                secret_key=self.secret_key, alpns=[ALPN], relay_mode=iroh.RelayMode.disabled())
            self.endpoint = await iroh.Endpoint.bind(options)
        except Exception as error:  # noqa: BLE001 - reported to the starting thread
            self.failure = error
            self.ready.set()
            return
        sockets = self.endpoint.bound_sockets()
        v4 = [s for s in sockets if not s.startswith("[")]
        port = int(v4[0].rsplit(":", 1)[1]) if v4 else self.port
        self.info = {"endpoint_id": str(self.endpoint.id()), "port": port, "bound": sockets,
                     "direct_addrs": [s for s in self.endpoint.addr().direct_addresses() if not s.startswith("[")] or v4}
        self.ready.set()
        while True:
            try:
                incoming = await self.endpoint.accept_next()
            except iroh.IrohError:
                continue
            if incoming is None:  # the endpoint was closed
                return
            asyncio.ensure_future(self._serve_connection(incoming))

    def stop(self, timeout=5):
        if self.loop is None or self.endpoint is None or self.loop.is_closed():
            return
        try:
            asyncio.run_coroutine_threadsafe(self._shutdown(), self.loop).result(timeout)
        except Exception:  # noqa: BLE001 - stopping anyway
            pass
        if self.thread is not None:
            self.thread.join(timeout)

    async def _shutdown(self):
        for conns in list(self.connections.values()):
            for conn in list(conns):
                try:
                    conn.close(0, b"")
                except iroh.IrohError:
                    pass
        try:
            await asyncio.wait_for(self.endpoint.close(), 2)
        except (asyncio.TimeoutError, iroh.IrohError):
            pass

    def close_connections_of(self, peer, code=0, reason=b""):
        """Closes every live connection of `peer` (from any thread); how many there were."""
        if self.loop is None:
            return 0
        done = threading.Event()
        count = [0]

        def close():
            for conn in list(self.connections.get(peer, ())):
                try:
                    conn.close(code, reason)
                    count[0] += 1
                except iroh.IrohError:
                    pass
            done.set()

        self.loop.call_soon_threadsafe(close)
        done.wait(5)
        return count[0]

    def live_connections(self):
        return {peer: len(conns) for peer, conns in self.connections.items() if conns}

    @staticmethod
    def parse_key(text):
        """The key a device_node_id names, as iroh parses it (EndpointId::from_str, after
        trimming, as the box's allowlist does), in its canonical spelling; None if it
        names none."""
        if not isinstance(text, str):
            return None
        try:
            return str(iroh.EndpointId.from_string(text.strip()))
        except Exception:  # noqa: BLE001 - IrohError or a uniffi type error
            return None

    # -- connections and streams

    async def _serve_connection(self, incoming):
        try:
            conn = await (await incoming.accept()).connect()
        except iroh.IrohError:
            return  # a failed handshake (wrong ALPN, say): iroh already answered it
        peer = str(conn.remote_id())
        if not self.app.allowed(peer):
            self.app.noted_refused(peer)
            conn.close(1, b"not allowlisted")
            return
        self.connections.setdefault(peer, set()).add(conn)
        try:
            while True:
                try:
                    bi = await conn.accept_bi()
                except iroh.IrohError:
                    break  # the peer closed the connection
                asyncio.ensure_future(self._serve_stream(conn, peer, bi))
        finally:
            self.connections.get(peer, set()).discard(conn)

    async def _serve_stream(self, conn, peer, bi):
        recv, send = bi.recv(), bi.send()
        stream = _StreamReader(recv)
        connection_id = conn.stable_id()
        try:
            while True:
                try:
                    parsed = await stream.read_request()
                except Incomplete:
                    return await self._finish(send)  # hyper: incomplete message, no answer
                except Malformed as problem:
                    status = problem.args[0]
                    await self._write(send, self._encode(status, [("content-length", "0")], b"", None, close=True))
                    return await self._finish(send)
                if parsed is None:
                    return await self._finish(send)  # a clean end between requests
                (method, target, version), headers, body, wire = parsed
                request = Request(method, target, version, headers, body, wire, peer, connection_id, stream)
                # hyper notices an end of the peer's sending side that arrived with the
                # request before the box's handler has done anything.
                if await stream.wait_end(self.app.fin_grace()) and not stream.buffer:
                    self.app.noted_aborted(request)
                    return await self._finish(send)
                answer = await self.app.handle(request)
                if answer.action == "reset":
                    await self._reset(send, recv)
                    return
                if answer.action == "abort" or stream.eof:
                    if answer.action != "abort":
                        self.app.noted_aborted(request, answered=True)
                    return await self._finish(send)
                close = not request.keep_alive
                data = self._encode(answer.status, answer.headers, answer.body, request, close)
                if not await self._write(send, data):
                    return
                if close:
                    return await self._finish(send)
        finally:
            stream.task.cancel()

    def _encode(self, status, headers, body, request, close):
        phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else ""
        lines = [f"HTTP/1.1 {status} {phrase}"]
        names = set()
        extra = self.app.common_headers(request) if request is not None else []
        for name, value in list(headers) + list(extra):
            if name.lower() in names and name.lower() != "vary":
                continue
            names.add(name.lower())
            lines.append(f"{name.lower()}: {value}")
        if "content-length" not in names:
            lines.append(f"content-length: {len(body)}")
        if close:
            lines.append("connection: close")
        lines.append("date: " + format_datetime(datetime.datetime.now(datetime.timezone.utc), usegmt=True))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _write(self, send, data):
        try:
            await send.write_all(data)
            return True
        except iroh.IrohError:
            return False

    async def _finish(self, send):
        try:
            await send.finish()
        except iroh.IrohError:
            pass

    async def _reset(self, send, recv):
        for call in (lambda: send.reset(0), lambda: recv.stop(0)):
            try:
                await call()
            except iroh.IrohError:
                pass
