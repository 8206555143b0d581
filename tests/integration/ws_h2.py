#!/usr/bin/python3
"""A WebSocket client over HTTP/2 (RFC 8441 extended CONNECT), python3-h2, for tests.
  ws_h2.py HOST PATH CAFILE MESSAGE [connect]
Connects to HOST:443 (TLS, ALPN h2, trusting CAFILE), opens a stream with :method CONNECT and
:protocol websocket (or a plain CONNECT with "connect"), sends MESSAGE as one masked text frame
once the answer is 200, and prints "status=N" and, on 200, "echo=<the text frame back>" (or
"close=CODE" when a close frame comes back)."""
import socket, ssl, struct, sys, os
import h2.config, h2.connection, h2.events, h2.settings

host, path, cafile, msg = sys.argv[1:5]
plain = len(sys.argv) > 5 and sys.argv[5] == "connect"
ctx = ssl.create_default_context(cafile=cafile)
ctx.set_alpn_protocols(["h2"])
s = ctx.wrap_socket(socket.create_connection((host, 443), timeout=10), server_hostname=host)
assert s.selected_alpn_protocol() == "h2", s.selected_alpn_protocol()
c = h2.connection.H2Connection(h2.config.H2Configuration(
    client_side=True, validate_outbound_headers=not plain))
c.initiate_connection()
s.sendall(c.data_to_send())

def events():
    data = s.recv(65536)
    if not data:
        raise SystemExit("status=closed")
    evs = c.receive_data(data)
    out = c.data_to_send()
    if out:
        s.sendall(out)
    return evs

# wait for the server's SETTINGS (extended CONNECT must be enabled before using it)
enabled = None
while enabled is None:
    for e in events():
        if isinstance(e, h2.events.RemoteSettingsChanged):
            st = e.changed_settings.get(h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL)
            enabled = bool(st and st.new_value)
if plain:
    hdrs = [(":method", "CONNECT"), (":authority", host + ":443")]
else:
    hdrs = [(":method", "CONNECT"), (":protocol", "websocket"), (":scheme", "https"),
            (":path", path), (":authority", host), ("sec-websocket-version", "13")]
sid = c.get_next_available_stream_id()
c.send_headers(sid, hdrs)
s.sendall(c.data_to_send())
status = None
buf = b""
while True:
    for e in events():
        if isinstance(e, h2.events.ResponseReceived) and e.stream_id == sid:
            status = dict(e.headers)[b":status"].decode()
            print("status=" + status)
            if status != "200":
                raise SystemExit(0)
            data = msg.encode()
            mask = os.urandom(4)
            frame = bytes([0x81, 0x80 | len(data)]) + mask + bytes(
                b ^ mask[i % 4] for i, b in enumerate(data))
            c.send_data(sid, frame)
            s.sendall(c.data_to_send())
        elif isinstance(e, h2.events.DataReceived) and e.stream_id == sid:
            c.acknowledge_received_data(e.flow_controlled_length, sid)
            buf += e.data
            if len(buf) >= 2 and len(buf) >= 2 + (buf[1] & 0x7F):
                if buf[0] & 0x0F == 8:  # a close frame: its code
                    print("close=%d" % struct.unpack("!H", buf[2:4])[0])
                else:
                    print("echo=" + buf[2:2 + (buf[1] & 0x7F)].decode())
                c.end_stream(sid)
                s.sendall(c.data_to_send())
                raise SystemExit(0)
        elif isinstance(e, h2.events.StreamReset) and e.stream_id == sid:
            print("status=reset")
            raise SystemExit(0)
