#!/usr/bin/env python3
"""A picoquic peer for mpquic's interop test (cli/tests/interop.rs).

picoquic comes from the PyPI wheel `aiopquic` (its extension module exports picoquic's C API);
aiopquic's Python API has no multipath switch, so this program drives picoquic directly through
ctypes, with its own UDP socket loop. Owning the loop lets the peer misbehave on purpose: abandon
a path with a chosen error code, drop everything arriving on a path, mark a path as backup.

It speaks mpquic's file protocol (cli/src/transfer.rs) on one bidirectional stream:
    request = "MPQ1" op:u8 name_len:u16 name [size:u64 data blake3[32] if op == 'P']
    reply   = status:u8 msg_len:u16 msg [size:u64 data blake3[32] after an OK to op 'G']

Roles:
    server: listens on --listen, stores uploads ('P') in --dir and serves downloads ('G') from
            it; ends when its connection closes.
    client: connects from --local (the first local address carries path 0, each further one
            probes a path) and uploads (--put FILE) or downloads (--get NAME --out FILE).

Options for L4S: --cc NAME picks picoquic's congestion control by name (prague: its L4S
controller), --ecn ect1|ect0 sets that codepoint on every datagram this peer sends and hands the
received ECN field to picoquic (which picoquic's own socket loop does with ECT(1) by default).

The last line on stdout is one JSON object: handshake, paths (per unique path id: addresses,
validated, bytes sent and received, status), the PATH_ABANDON frames received (from picoquic's
text log), the transfer and its BLAKE3 hash. A server first prints {"listening": "IP:PORT"}.
"""

import argparse
import ctypes
import glob
import json
import os
import re
import select
import socket
import struct
import sys
import tempfile
import time

import blake3

ALPN = b"mpquic/1"
MAGIC = b"MPQ1"
HASH_LEN = 32

# picoquic_call_back_event_t (picoquic.h), the events this peer handles.
EV_STREAM_DATA = 0
EV_STREAM_FIN = 1
EV_STREAM_RESET = 2
EV_STATELESS_RESET = 4
EV_CLOSE = 5
EV_APPLICATION_CLOSE = 6
EV_ALMOST_READY = 9
EV_READY = 10
EV_PATH_AVAILABLE = 20
EV_PATH_DELETED = 22

PATH_STATUS = {"available": 0, "backup": 1}

# How long the first datagrams from an address no live path uses wait (see Peer.receive).
NEW_PATH_HOLD_S = 0.02
# Linux's setsockopt option that lets root pass net.core.rmem_max.
SO_RCVBUFFORCE = 33
# Linux's IP_RECVTOS (Python's socket module lacks it on some builds): the TOS byte of each
# received datagram as a control message (level IPPROTO_IP, type IP_TOS).
IP_RECVTOS = 13
# The ECN field's values (RFC 3168) and their names in the report.
ECN_CODEPOINTS = {"ect1": 1, "ect0": 2}
ECN_NAMES = ("not_ect", "ect1", "ect0", "ce")
# Path IDs beyond the highest known that refresh_paths looks up.
PATHS_AHEAD = 3

CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,  # picoquic_cnx_t*
    ctypes.c_uint64,  # stream id (the unique path id for path events)
    ctypes.POINTER(ctypes.c_uint8),
    ctypes.c_size_t,
    ctypes.c_int,  # event
    ctypes.c_void_p,  # callback context
    ctypes.c_void_p,  # stream context
)


class ConnectionId(ctypes.Structure):
    _fields_ = [("id", ctypes.c_uint8 * 20), ("id_len", ctypes.c_uint8)]


class PathQuality(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in (
            "receive_rate_estimate pacing_rate cwin rtt rtt_sample rtt_variant rtt_min rtt_max "
            "sent lost timer_losses spurious_losses max_spurious_rtt max_reorder_delay "
            "max_reorder_gap bytes_in_transit bytes_sent bytes_received"
        ).split()
    ]


def find_library():
    """The extension module of aiopquic that carries picoquic's symbols."""
    import aiopquic

    here = os.path.dirname(aiopquic.__file__)
    found = glob.glob(os.path.join(here, "_binding", "_transport*.so"))
    if not found:
        sys.exit("picoquic_peer: aiopquic's _transport extension not found under " + here)
    return found[0]


def load_picoquic():
    lib = ctypes.CDLL(find_library())
    vp, u64, i32, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int, ctypes.c_size_t
    signatures = {
        "picoquic_create": (vp, [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_char_p, vp, vp, vp, vp, vp, u64, vp,
                                 ctypes.c_char_p, vp, sz]),
        "picoquic_free": (None, [vp]),
        "picoquic_current_time": (u64, []),
        "picoquic_set_null_verifier": (None, [vp]),
        "picoquic_set_default_multipath_option": (None, [vp, i32]),
        "picoquic_enable_path_callbacks_default": (None, [vp, i32]),
        "picoquic_set_qlog": (i32, [vp, ctypes.c_char_p]),
        "picoquic_set_default_congestion_algorithm_by_name": (None, [vp, ctypes.c_char_p]),
        "picoquic_get_congestion_algorithm": (vp, [ctypes.c_char_p]),
        "picoquic_register_all_congestion_control_algorithms": (None, []),
        "picoquic_create_client_cnx": (vp, [vp, vp, u64, ctypes.c_uint32, ctypes.c_char_p,
                                            ctypes.c_char_p, vp, vp]),
        "picoquic_prepare_next_packet": (i32, [vp, u64, vp, sz, ctypes.POINTER(sz), vp, vp,
                                               ctypes.POINTER(i32), ctypes.POINTER(ConnectionId),
                                               ctypes.POINTER(vp)]),
        "picoquic_incoming_packet": (i32, [vp, vp, sz, vp, vp, i32, ctypes.c_ubyte, u64]),
        "picoquic_get_next_wake_delay": (ctypes.c_int64, [vp, u64, ctypes.c_int64]),
        "picoquic_add_to_stream": (i32, [vp, u64, vp, sz, i32]),
        "picoquic_probe_new_path": (i32, [vp, vp, vp, u64]),
        "picoquic_abandon_path": (i32, [vp, u64, u64, u64]),
        "picoquic_set_path_status": (i32, [vp, u64, i32]),
        "picoquic_get_path_quality": (i32, [vp, u64, ctypes.POINTER(PathQuality)]),
        "picoquic_get_path_addr": (i32, [vp, u64, i32, vp]),
        "picoquic_get_cnx_state": (i32, [vp]),
        "picoquic_close": (i32, [vp, u64]),
        "picoquic_delete_cnx": (None, [vp]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    return lib


# struct sockaddr_storage is 128 bytes; an IPv4 sockaddr_in is family (host order), port and
# address (network order), then zeros.
SOCKADDR_LEN = 128


def to_sockaddr(addr):
    buf = ctypes.create_string_buffer(SOCKADDR_LEN)
    packed = struct.pack("=H", socket.AF_INET) + struct.pack("!H", addr[1])
    buf[: len(packed) + 4] = packed + socket.inet_aton(addr[0])
    return buf


def from_sockaddr(buf):
    family = struct.unpack_from("=H", buf, 0)[0]
    if family != socket.AF_INET:
        return None
    port = struct.unpack_from("!H", buf, 2)[0]
    return (socket.inet_ntoa(bytes(buf[4:8])), port)


def parse_addr(text):
    host, port = text.rsplit(":", 1)
    return (host, int(port))


def file_hash(path):
    hasher = blake3.blake3()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


class Path:
    """What the peer saw of one path (picoquic's unique path id = the multipath path ID)."""

    def __init__(self, path_id):
        self.id = path_id
        self.local = None
        self.remote = None
        self.validated = False
        self.deleted = False
        self.status = "available"
        self.bytes_sent = 0
        self.bytes_received = 0

    def report(self):
        return {
            "id": self.id,
            "local": self.local,
            "remote": self.remote,
            "validated": self.validated,
            "deleted": self.deleted,
            "status": self.status,
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
        }


class Transfer:
    """mpquic's file protocol on one bidirectional stream, either end of it."""

    def __init__(self, args):
        self.args = args
        self.inbox = bytearray()  # appended to in place: a few MB arrive in ~1400-byte pieces
        self.fin = False
        self.request = None  # (op, name, size) once parsed
        self.done = False
        self.error = None
        self.result = {}

    def on_data(self, data, fin):
        self.inbox += data
        self.fin = self.fin or fin

    # --- the client's half ---

    def client_request(self):
        if self.args.put:
            name = self.args.name or os.path.basename(self.args.put)
            with open(self.args.put, "rb") as f:
                data = f.read()
            header = MAGIC + b"P" + struct.pack("!H", len(name)) + name.encode()
            self.result = {"op": "put", "name": name, "bytes": len(data),
                           "blake3": blake3.blake3(data).hexdigest()}
            return header + struct.pack("!Q", len(data)) + data + blake3.blake3(data).digest()
        name = self.args.get
        self.result = {"op": "get", "name": name}
        return MAGIC + b"G" + struct.pack("!H", len(name)) + name.encode()

    def client_progress(self):
        """Reads the reply (and a download); True once the transfer is over."""
        if len(self.inbox) < 3:
            return self.fail_if_ended("the stream ended without a reply")
        msg_len = struct.unpack_from("!H", self.inbox, 1)[0]
        if len(self.inbox) < 3 + msg_len:
            return self.fail_if_ended("the stream ended inside the reply")
        if self.inbox[0] != 0:
            return self.finish(error="server: " + self.inbox[3:3 + msg_len].decode(errors="replace"))
        if self.args.put:
            return self.finish()
        # Offsets into the inbox, not slices of it: a download is parsed again at each arrival.
        start = 3 + msg_len
        if len(self.inbox) < start + 8:
            return self.fail_if_ended("the stream ended before the size")
        size = struct.unpack_from("!Q", self.inbox, start)[0]
        start += 8
        if len(self.inbox) < start + size + HASH_LEN:
            got = len(self.inbox) - start
            return self.fail_if_ended(f"the stream ended after {got} of {size} bytes")
        data = bytes(self.inbox[start:start + size])
        digest = bytes(self.inbox[start + size:start + size + HASH_LEN])
        if blake3.blake3(data).digest() != digest:
            return self.finish(error="integrity check failed: BLAKE3 mismatch")
        with open(self.args.out, "wb") as f:
            f.write(data)
        self.result.update(bytes=size, blake3=digest.hex())
        return self.finish()

    # --- the server's half ---

    def server_progress(self):
        """Parses the request; returns the bytes to send back (and FIN) once it is complete."""
        if self.done:
            return None  # answered; what follows is the client's FIN
        if self.request is None:
            if len(self.inbox) < 7:
                return None
            if self.inbox[:4] != MAGIC:
                self.finish(error="not an mpquic request")
                return reply(1, "not an mpquic transfer request")
            name_len = struct.unpack_from("!H", self.inbox, 5)[0]
            op = chr(self.inbox[4])
            need = 7 + name_len + (8 if op == "P" else 0)
            if len(self.inbox) < need:
                return None
            name = self.inbox[7:7 + name_len].decode()
            size = struct.unpack_from("!Q", self.inbox, 7 + name_len)[0] if op == "P" else 0
            self.request = (op, name, size)
            del self.inbox[:need]
        op, name, size = self.request
        target = os.path.join(self.args.dir, os.path.basename(name))
        if op == "G":
            with open(target, "rb") as f:
                data = f.read()
            self.result = {"op": "get", "name": name, "bytes": len(data),
                           "blake3": blake3.blake3(data).hexdigest()}
            self.finish()
            body = struct.pack("!Q", len(data)) + data + blake3.blake3(data).digest()
            return reply(0, "") + body
        if op != "P":
            self.finish(error=f"unsupported request {op!r}")
            return reply(1, f"unsupported request type {op!r}")
        if len(self.inbox) < size + HASH_LEN:
            return None
        data, digest = bytes(self.inbox[:size]), bytes(self.inbox[size:size + HASH_LEN])
        if blake3.blake3(data).digest() != digest:
            self.finish(error="integrity check failed: BLAKE3 mismatch")
            return reply(1, "integrity check failed")
        with open(target, "wb") as f:
            f.write(data)
        self.result = {"op": "put", "name": name, "bytes": size, "blake3": digest.hex()}
        self.finish()
        return reply(0, "")

    def fail_if_ended(self, why):
        if self.fin:
            return self.finish(error=why)
        return False

    def finish(self, error=None):
        self.done = True
        self.error = error
        return True


def reply(status, msg):
    msg = msg.encode()
    return bytes([status]) + struct.pack("!H", len(msg)) + msg


class Peer:
    def __init__(self, args):
        self.args = args
        self.lib = load_picoquic()
        self.paths = {}
        self.cnx = None
        self.handshake = False
        self.closed = False
        self.transfer = Transfer(args)
        self.pending_probes = []  # (local, remote) pairs still to open
        self.abandoned_at = None  # seconds after the handshake
        self.ended_at = None
        self.ready_at = None
        self.status_set = False
        self.drop_from = None  # the remote address whose datagrams are dropped
        self.dropped = 0
        self.held = []  # (due, local, datagram, source, ecn) of new paths, see receive()
        self.received_ecn = [0, 0, 0, 0]  # datagrams received per ECN field value
        self.sockets = {}  # local (ip, port) -> socket
        self.callback = CALLBACK(self.on_event)  # kept alive: picoquic holds the pointer
        self.quic = self.create_context()

    # --- setup ---

    def create_context(self):
        a, lib = self.args, self.lib
        server = a.role == "server"
        quic = lib.picoquic_create(
            8, a.cert.encode() if server else None, a.key.encode() if server else None, None,
            ALPN, ctypes.cast(self.callback, ctypes.c_void_p) if server else None, None, None,
            None, None, lib.picoquic_current_time(), None, None, None, 0)
        if not quic:
            sys.exit("picoquic_peer: picoquic_create failed (certificate or key unreadable?)")
        if not server:
            # mpquic's lab servers present self-signed certificates.
            lib.picoquic_set_null_verifier(quic)
        # Bit 1: the multipath extension (RFC 10069), initial_max_path_id 2.
        lib.picoquic_set_default_multipath_option(quic, 1)
        lib.picoquic_enable_path_callbacks_default(quic, 1)
        # The qlog, not the text log: picoquic 1.1.53's text log dereferences a deleted path when
        # it logs a packet lost on it, and crashes; its qlog does not.
        os.makedirs(a.qlog, exist_ok=True)
        lib.picoquic_set_qlog(quic, a.qlog.encode())
        if a.cc:
            # By name, as picoquic's own tools take it (the table they look up is empty until
            # registered); an unknown name would silently fall back to picoquic's default, so
            # it is refused here.
            lib.picoquic_register_all_congestion_control_algorithms()
            if not lib.picoquic_get_congestion_algorithm(a.cc.encode()):
                sys.exit(f"picoquic_peer: picoquic has no congestion control named {a.cc!r}")
            lib.picoquic_set_default_congestion_algorithm_by_name(quic, a.cc.encode())
        return quic

    def bind(self, addr):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        # A deep receive buffer: this loop is slower than mpquic's sender, and a datagram lost
        # to a full buffer looks like congestion (or a dead path) to it. Past rmem_max only
        # root may go (SO_RCVBUFFORCE).
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
        except PermissionError:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        if self.args.ecn != "none":
            # This loop owns the sockets, so it does what picoquic's own socket loop does
            # (picoquic_socket_set_ecn_options): the codepoint on every datagram sent, and the
            # received TOS handed to picoquic, whose ACK frames then carry ECN counts.
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, ECN_CODEPOINTS[self.args.ecn])
            sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        sock.bind(addr)
        sock.setblocking(False)
        self.sockets[sock.getsockname()] = sock
        return sock.getsockname()

    def start_client(self):
        a, lib = self.args, self.lib
        locals_ = [self.bind((ip, 0)) for ip in a.local]
        server = parse_addr(a.server)
        self.cnx = lib.picoquic_create_client_cnx(
            self.quic, to_sockaddr(server), lib.picoquic_current_time(), 0,
            (a.sni or server[0]).encode(), ALPN, ctypes.cast(self.callback, ctypes.c_void_p),
            None)
        if not self.cnx:
            sys.exit("picoquic_peer: picoquic_create_client_cnx failed")
        self.pending_probes = [(local, server) for local in locals_[1:]]

    # --- picoquic's callback ---

    def on_event(self, cnx, stream_id, data, length, event, _ctx, _stream_ctx):
        try:
            self.handle_event(cnx, stream_id, data, length, event)
        except Exception as e:  # an exception must not unwind through C
            self.transfer.finish(error=f"peer error: {e!r}")
        return 0

    def handle_event(self, cnx, stream_id, data, length, event):
        if self.cnx is None:
            self.cnx = cnx  # a server's first (and only) connection
        if event in (EV_STREAM_DATA, EV_STREAM_FIN):
            self.transfer.on_data(ctypes.string_at(data, length) if length else b"",
                                  event == EV_STREAM_FIN)
            self.on_stream(stream_id)
        elif event == EV_STREAM_RESET:
            self.transfer.finish(error="the peer reset the stream")
        elif event in (EV_CLOSE, EV_APPLICATION_CLOSE, EV_STATELESS_RESET):
            self.closed = True
        elif event in (EV_ALMOST_READY, EV_READY):
            self.on_ready(event)
        elif event == EV_PATH_AVAILABLE:
            self.path(stream_id).validated = True
        elif event == EV_PATH_DELETED:
            self.path(stream_id).deleted = True

    def on_ready(self, event):
        if event == EV_READY and not self.handshake:
            self.handshake = True
            self.ready_at = time.monotonic()
            self.path(0).validated = True
            if self.args.role == "client":
                request = self.transfer.client_request()
                self.send(0, request, fin=True)

    def on_stream(self, stream_id):
        if self.args.role == "client":
            self.transfer.client_progress()
            return
        answer = self.transfer.server_progress()
        if answer is not None:
            self.send(stream_id, answer, fin=True)

    def send(self, stream_id, data, fin):
        buf = ctypes.create_string_buffer(data, len(data))
        if self.lib.picoquic_add_to_stream(self.cnx, stream_id, buf, len(data), int(fin)) != 0:
            self.transfer.finish(error="picoquic_add_to_stream failed")

    def since_ready(self):
        return time.monotonic() - self.ready_at

    def path(self, path_id):
        return self.paths.setdefault(path_id, Path(path_id))

    # --- the misbehaviours the test asks for ---

    def carried(self):
        return sum(p.bytes_sent + p.bytes_received for p in self.paths.values())

    def misbehave(self, now):
        a = self.args
        if a.abandon_path is not None and self.abandoned_at is None and self.carried() >= a.abandon_after_bytes:
            if self.lib.picoquic_abandon_path(self.cnx, a.abandon_path, a.abandon_code, now) == 0:
                self.abandoned_at = self.since_ready()
                log(f"abandoned path {a.abandon_path} with {a.abandon_code:#x} after {self.carried()} bytes")
        if a.drop_path is not None and self.drop_from is None and self.carried() >= a.drop_after_bytes:
            remote = self.paths.get(a.drop_path)
            if remote is not None and remote.remote is not None:
                self.drop_from = parse_addr(remote.remote)
                log(f"dropping everything from {remote.remote} (path {a.drop_path}) after {self.carried()} bytes")
        if a.backup_path is not None and not self.status_set:
            path = self.paths.get(a.backup_path)
            if path is not None and path.validated and not path.deleted:
                if self.lib.picoquic_set_path_status(self.cnx, a.backup_path, PATH_STATUS["backup"]) == 0:
                    self.status_set = True
                    path.status = "backup"
                    log(f"path {a.backup_path} marked backup")

    # --- the socket loop ---

    def refresh_paths(self):
        """Copies picoquic's counters and addresses of every live path (a deleted path keeps
        its last ones). The next few path IDs are looked up too: a path picoquic created is
        known here from its first datagram on, before it is validated."""
        quality = PathQuality()
        addr = ctypes.create_string_buffer(SOCKADDR_LEN)
        upcoming = range(max(self.paths, default=0) + PATHS_AHEAD)
        for path_id in sorted(set(self.paths) | set(upcoming)):
            path = self.paths.get(path_id) or Path(path_id)
            if path.deleted:
                continue
            if self.lib.picoquic_get_path_quality(self.cnx, path_id, ctypes.byref(quality)) != 0:
                continue  # no such path (yet)
            self.paths[path_id] = path
            path.bytes_sent, path.bytes_received = quality.bytes_sent, quality.bytes_received
            for which, attr in ((1, "local"), (2, "remote")):
                if self.lib.picoquic_get_path_addr(self.cnx, path_id, which, addr) == 0:
                    found = from_sockaddr(addr)
                    if found is not None and found[1] != 0:
                        setattr(path, attr, f"{found[0]}:{found[1]}")

    def probe_paths(self, now):
        still = []
        for local, remote in self.pending_probes:
            if self.lib.picoquic_probe_new_path(self.cnx, to_sockaddr(remote), to_sockaddr(local), now) != 0:
                still.append((local, remote))  # not allowed yet (path IDs or CIDs): retry
        self.pending_probes = still

    def send_ready_packets(self):
        lib = self.lib
        buf = ctypes.create_string_buffer(1536)
        length = ctypes.c_size_t()
        to, frm = ctypes.create_string_buffer(SOCKADDR_LEN), ctypes.create_string_buffer(SOCKADDR_LEN)
        if_index, logcid, last = ctypes.c_int(), ConnectionId(), ctypes.c_void_p()
        while True:
            ctypes.memset(frm, 0, SOCKADDR_LEN)
            ret = lib.picoquic_prepare_next_packet(
                self.quic, lib.picoquic_current_time(), buf, len(buf), ctypes.byref(length), to,
                frm, ctypes.byref(if_index), ctypes.byref(logcid), ctypes.byref(last))
            if ret != 0 or length.value == 0:
                return
            dest = from_sockaddr(to)
            if dest is None:
                continue
            sock = self.socket_for(from_sockaddr(frm))
            try:
                sock.sendto(buf.raw[: length.value], dest)
            except (BlockingIOError, OSError):
                pass  # a full socket buffer is a lost packet, which QUIC recovers

    def socket_for(self, local):
        if local is not None:
            for (ip, port), sock in self.sockets.items():
                if ip == local[0] and (local[1] in (0, port)):
                    return sock
        return next(iter(self.sockets.values()))

    def receive(self, sock):
        local = sock.getsockname()
        live = {p.remote for p in self.paths.values() if not p.deleted}
        while True:
            try:
                data, ancillary, _flags, source = sock.recvmsg(2048, socket.CMSG_SPACE(4))
            except BlockingIOError:
                return
            ecn = received_ecn(ancillary)
            self.received_ecn[ecn] += 1
            if self.drop_from is not None and source == self.drop_from:
                self.dropped += 1
                continue
            if self.handshake and f"{source[0]}:{source[1]}" not in live:
                # A new path's first datagrams wait a moment, so that the frames giving it
                # connection IDs, sent on a live path at about the same time, go in first:
                # picoquic 1.1.53 crashes when it must answer on a path it has no ID for.
                self.held.append((time.monotonic() + NEW_PATH_HOLD_S, local, data, source, ecn))
                continue
            self.deliver(local, data, source, ecn)

    def deliver(self, local, data, source, ecn):
        packet = ctypes.create_string_buffer(data, len(data))
        self.lib.picoquic_incoming_packet(
            self.quic, packet, len(data), to_sockaddr(source), to_sockaddr(local), 0, ecn,
            self.lib.picoquic_current_time())

    def deliver_held(self):
        """Delivers the held datagrams that are due; returns the seconds until the next is."""
        now = time.monotonic()
        due = [h for h in self.held if h[0] <= now]
        self.held = [h for h in self.held if h[0] > now]
        for _, local, data, source, ecn in due:
            self.deliver(local, data, source, ecn)
        return min((h[0] - now for h in self.held), default=None)

    def finished(self):
        if self.args.role == "client":
            return self.closed or (self.transfer.done and self.close_sent_at is not None
                                   and time.monotonic() - self.close_sent_at > 0.3)
        return self.closed

    def run(self):
        deadline = time.monotonic() + self.args.timeout
        self.close_sent_at = None
        while not self.finished():
            if time.monotonic() > deadline:
                self.transfer.error = self.transfer.error or f"timed out after {self.args.timeout} s"
                break
            now = self.lib.picoquic_current_time()
            if self.cnx is not None:
                self.refresh_paths()
                if self.handshake:
                    self.probe_paths(now)
                    self.misbehave(now)
                if self.args.role == "client" and self.transfer.done and self.close_sent_at is None:
                    self.lib.picoquic_close(self.cnx, 0)
                    self.close_sent_at = time.monotonic()
            self.send_ready_packets()
            delay = self.lib.picoquic_get_next_wake_delay(self.quic, self.lib.picoquic_current_time(), 10000)
            timeout = max(delay, 0) / 1e6
            next_held = self.deliver_held()
            if next_held is not None:
                timeout = min(timeout, next_held)
            ready, _, _ = select.select(list(self.sockets.values()), [], [], timeout)
            for sock in ready:
                self.receive(sock)
        # A server's connection is gone once closed (picoquic deletes it); a client's stays ours.
        if self.cnx is not None and not self.closed:
            self.refresh_paths()
        self.send_ready_packets()
        if self.ready_at is not None:
            self.ended_at = self.since_ready()
        if self.args.role == "client" and self.cnx is not None:
            self.lib.picoquic_delete_cnx(self.cnx)  # which also closes its qlog

    def report(self):
        t = self.transfer
        events = qlog_events(self.args.qlog)
        return {
            "role": self.args.role,
            "handshake": self.handshake,
            "multipath_paths": sorted(p.id for p in self.paths.values() if p.validated),
            "paths": [p.report() for p in sorted(self.paths.values(), key=lambda p: p.id)],
            "peer_initial_max_path_id": peer_initial_max_path_id(events),
            "abandons_received": abandons_received(events),
            "dropped_datagrams": self.dropped,
            "cc": self.args.cc,
            "ecn_sent": self.args.ecn,
            # Without --ecn the TOS is not read and every datagram counts as not-ECT.
            "received_ecn": dict(zip(ECN_NAMES, self.received_ecn)),
            "abandoned_at_s": self.abandoned_at,
            "ended_at_s": self.ended_at,
            "transfer": dict(t.result, done=t.done and t.error is None, error=t.error),
        }


def qlog_events(qlog_dir):
    """(event name, text) of every event in picoquic's qlog files in `qlog_dir`.

    picoquic writes one event per line group, each opening with `[time, path, "category",
    "event", {`; an unfinished file (a connection not yet deleted) still splits cleanly."""
    events = []
    for name in sorted(glob.glob(os.path.join(qlog_dir, "*.qlog"))):
        with open(name, errors="replace") as f:
            text = f.read()
        for chunk in re.split(r"\n(?=\[\d+, \d+, \")", text):
            m = re.match(r'\[\d+, \d+, "\w+", "(\w+)"', chunk)
            if m:
                events.append((m.group(1), chunk))
    return events


def peer_initial_max_path_id(events):
    """The peer's initial_max_path_id transport parameter (RFC 10069: it offers multipath), or
    None when it sent none."""
    for name, text in events:
        if name == "parameters_set" and '"owner": "remote"' in text:
            m = re.search(r'"initial_max_path_id" : (\d+)', text)
            if m:
                return int(m.group(1))
    return None


def abandons_received(events):
    """The PATH_ABANDON frames in the packets picoquic received."""
    found = []
    for name, text in events:
        if name == "packet_received":
            for m in re.finditer(r'"frame_type": "path_abandon", "path_id": (\d+), "reason": (\d+)', text):
                found.append({"path_id": int(m.group(1)), "reason": int(m.group(2))})
    return found


def received_ecn(ancillary):
    """The ECN field of a received datagram from its IP_TOS control message (0 without one)."""
    for level, kind, data in ancillary:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS and data:
            return data[0] & 3
    return 0


def log(msg):
    print(f"picoquic_peer: {msg}", file=sys.stderr, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--role", choices=["server", "client"], required=True)
    p.add_argument("--listen", help="server: IP:PORT (port 0: the OS chooses)")
    p.add_argument("--cert", help="server: certificate chain (PEM)")
    p.add_argument("--key", help="server: private key (PEM)")
    p.add_argument("--dir", help="server: where uploads go and downloads come from")
    p.add_argument("--server", help="client: the server's IP:PORT")
    p.add_argument("--sni", help="client: server name (default: the server's IP)")
    p.add_argument("--local", action="append", default=[],
                   help="client: a local IP (repeatable; the first carries path 0, each other opens a path)")
    p.add_argument("--put", help="client: upload this file")
    p.add_argument("--name", help="client: the upload's name on the server")
    p.add_argument("--get", help="client: download this name")
    p.add_argument("--out", help="client: where the download goes")
    p.add_argument("--abandon-path", type=int, help="abandon this path id ...")
    p.add_argument("--abandon-code", type=lambda s: int(s, 0), default=0x3E76, help="... with this error code ...")
    p.add_argument("--abandon-after-bytes", type=int, default=0,
                   help="... once the connection carried this many bytes (all paths, both ways)")
    p.add_argument("--drop-path", type=int, help="drop every datagram arriving on this path ...")
    p.add_argument("--drop-after-bytes", type=int, default=0, help="... once the connection carried this many bytes")
    p.add_argument("--backup-path", type=int, help="mark this path as backup once it is validated")
    p.add_argument("--qlog", help="a directory for picoquic's qlog (read back for the report; default: a temporary one)")
    p.add_argument("--timeout", type=float, default=60.0, help="give up after this many seconds")
    p.add_argument("--cc", help="picoquic's congestion control by name (newreno, cubic, dcubic, fast, bbr, bbr1, prague, ...; default: picoquic's)")
    p.add_argument("--ecn", choices=["none", *ECN_CODEPOINTS], default="none",
                   help="the ECN codepoint every datagram carries, and read the received ones (default: none, not-ECT)")
    args = p.parse_args()
    if args.role == "server":
        if not (args.listen and args.cert and args.key and args.dir):
            p.error("a server needs --listen, --cert, --key and --dir")
    elif not (args.server and args.local and (args.put or (args.get and args.out))):
        p.error("a client needs --server, --local and --put FILE or --get NAME --out FILE")
    if args.qlog is None:
        args.qlog = tempfile.mkdtemp(prefix="picoquic-peer-")

    peer = Peer(args)
    if args.role == "server":
        bound = peer.bind(parse_addr(args.listen))
        print(json.dumps({"listening": f"{bound[0]}:{bound[1]}"}), flush=True)
    else:
        peer.start_client()
    peer.run()
    report = peer.report()
    print(json.dumps(report), flush=True)
    sys.exit(0 if report["transfer"]["done"] else 1)


if __name__ == "__main__":
    main()
