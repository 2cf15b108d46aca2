extension Bridge {
    static let help = """
    ariata-iroh-bridge: carries ariata-agent's HTTP/1.1 requests to a Virtues box over iroh.

    The daemon starts it for an upload cycle and writes ONE line of JSON on its stdin:

      {"secret_key":"<64 hex: the device's 32-byte Ed25519 seed>",
       "box_node_id":"<64 hex: the box's EndpointId>",
       "relay_url":"https://relay.example" or null,
       "direct_addrs":["192.0.2.1:51820"],
       "socket":"/path/to/bridge.sock",
       "alpn":"virtues/http/1",
       "connect_timeout_seconds":10}

    (alpn and connect_timeout_seconds may be left out: these are their defaults; a null
    relay_url needs at least one direct address.) The secret is never printed or logged.
    stdin then stays open: when it ends (the daemon closed it, or died), the bridge closes
    its endpoint and exits 0. SIGTERM and SIGINT do the same.

    It binds an iroh endpoint with the minimal preset (no discovery, no n0 relays; only the
    given relay, or none), the device's key, any local port, and connects to the box over
    the relay and direct addresses with the ALPN, within the timeout. Then it listens on
    the Unix socket (mode 0600; a stale file there is removed) and prints one JSON line:

      {"event":"ready","endpoint_id":"<own id, 64 lower-case hex>","path":"direct"|"relay"|"unknown"}

    or, if setting up fails, {"event":"error","error":"<code>","message":"..."} and exits 1.
    Codes: bad_config, bind_failed, not_allowlisted (the box closed the connection: code 1,
    "not allowlisted"), unreachable (no answer within the timeout), connection_failed.

    Each connection to the socket is carried as the raw bytes of a new bidirectional
    stream (the connection is made again first if it has closed): the client's bytes go
    out as they come, the box's answer comes back until its stream ends, then the client
    is closed and only then the stream's sending side is finished. The end of the
    client's data is not passed on while the answer is awaited (the box aborts a stream
    finished before its answer); a client that closes its connection after (some of) the
    answer does end the stream. Send each request with "Connection: close" on a
    connection of its own (the box keeps a stream open for a next request otherwise).
    With curl:

      curl --unix-socket /path/to/bridge.sock http://box/api/box/health

    If the box cannot be asked (the stream or a new connection fails before any answer
    byte), the client gets the bridge's own answer,

      HTTP/1.1 502 Bad Gateway
      X-Ariata-Iroh-Error: <code>
      {"iroh_error":"<code>","message":"..."}

    with the codes above or connection_lost, and stdout gets
    {"event":"failed","error":"<code>","message":"..."}. A failure after part of the answer
    has gone out only closes the client's connection.

    stdout carries only these JSON lines, one object each; diagnostics go to stderr.

    Options: --help, --version.

    """
}
