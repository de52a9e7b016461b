"""The PostgreSQL protocol at the message level, for tests that send what drivers never do
(an Execute of a portal that already ran, a socket closed without Terminate)."""
import socket
import struct


def message(kind, body=b""):
    return kind + struct.pack("!i", 4 + len(body)) + body


def cstring(text):
    return text.encode() + b"\0"


def parse(sql, statement=""):
    return message(b"P", cstring(statement) + cstring(sql) + struct.pack("!h", 0))


def bind(portal="", statement=""):
    # No parameters, no result formats (text).
    return message(b"B", cstring(portal) + cstring(statement) + struct.pack("!hhh", 0, 0, 0))


def execute(portal="", max_rows=0):
    return message(b"E", cstring(portal) + struct.pack("!i", max_rows))


def sync():
    return message(b"S")


def query(sql):
    return message(b"Q", cstring(sql))


class Session:
    """One connection: startup, then messages sent and the replies read up to ReadyForQuery."""

    def __init__(self, b):
        self.sock = socket.create_connection((b["host"], b["port"]))
        params = f"user\0{b['user']}\0database\0{b['dbname']}\0\0".encode()
        self.sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
        self.buf = b""
        self.pid = None
        for kind, body in self._until_ready():
            if kind == b"K":
                self.pid = struct.unpack("!i", body[:4])[0]
            assert kind != b"E", body

    def _next(self):
        while len(self.buf) < 5 or len(self.buf) < 1 + struct.unpack("!i", self.buf[1:5])[0]:
            chunk = self.sock.recv(65536)
            assert chunk, "the server closed the connection"
            self.buf += chunk
        kind, length = self.buf[0:1], struct.unpack("!i", self.buf[1:5])[0]
        body, self.buf = self.buf[5 : 1 + length], self.buf[1 + length :]
        return kind, body

    def _until_ready(self):
        out = []
        while True:
            kind, body = self._next()
            out.append((kind, body))
            if kind == b"Z":
                return out

    def wait_for(self, kind):
        """Read messages up to one of type `kind` (e.g. b"G", CopyInResponse)."""
        out = []
        while True:
            k, body = self._next()
            out.append(summary(k, body))
            if k == kind:
                return [x for x in out if x is not None]
            assert k != b"E", body

    def send(self, *messages):
        self.sock.sendall(b"".join(messages))

    def run(self, *messages):
        """Send `messages` and read the replies to each Sync and Query in them, summarised:
        ('C', tag), ('E', sqlstate), 'D' for a row, 's' for PortalSuspended, ('Z', status)."""
        self.send(*messages)
        out = []
        for m in messages:
            if m[:1] in (b"S", b"Q"):
                out += [summary(kind, body) for kind, body in self._until_ready()]
        return [x for x in out if x is not None]

    def close(self):
        self.sock.close()


def summary(kind, body):
    if kind == b"C":
        return ("C", body.rstrip(b"\0").decode())
    if kind == b"E":
        fields = {f[:1]: f[1:].decode() for f in body.split(b"\0") if f}
        return ("E", fields.get(b"C"))
    if kind == b"Z":
        return ("Z", body.decode())
    if kind == b"D":
        return "D"
    if kind == b"s":
        return "s"
    return None


def flush():
    return message(b"H")
