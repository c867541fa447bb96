#!/usr/bin/env python3
"""A user-space Gluster client, as any user on a host with libgfapi can run one.

gfprobe.py SERVER VOLUME [BRICK PORT]

Tries, against VOLUME served from SERVER, each way a client could reach a
job's RAMDISK without RSA, and prints one line a try: "NAME ok: ..." when it
got through, "NAME refused: ..." when it did not. It claims root's uid and
gid (glfs_setfsuid) and a pid below zero (glfs_setfspid, which Gluster's
read-only and its internal clients trust), as a client of a server that
believes what clients say can. With BRICK and PORT it also sends glusterd's
port mapper a SIGNOUT of that brick (no credentials: the RPC has none).

The tests read the lines; a try that hangs past its alarm counts as refused
(nothing got through), and says so.
"""

import ctypes
import ctypes.util
import os
import signal
import socket
import stat
import struct
import sys

PROBE = "rsa-gfprobe"


def main():
    if len(sys.argv) not in (3, 5):
        print("usage: gfprobe.py SERVER VOLUME [BRICK PORT]", file=sys.stderr)
        return 2
    server, volume = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5:
        signout(server, sys.argv[3], int(sys.argv[4]))
    gfapi(server, volume)
    return 0


def say(name, ok, detail):
    print(f"{name} {'ok' if ok else 'refused'}: {detail}", flush=True)


def gfapi(server, volume):
    lib = ctypes.CDLL("libgfapi.so.0", use_errno=True)
    lib.glfs_new.restype = ctypes.c_void_p
    lib.glfs_new.argtypes = [ctypes.c_char_p]
    lib.glfs_set_volfile_server.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    lib.glfs_set_logging.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.glfs_init.argtypes = [ctypes.c_void_p]
    lib.glfs_opendir.restype = ctypes.c_void_p
    lib.glfs_opendir.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.glfs_readdir.restype = ctypes.c_void_p
    lib.glfs_readdir.argtypes = [ctypes.c_void_p]
    lib.glfs_open.restype = ctypes.c_void_p
    lib.glfs_open.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    lib.glfs_creat.restype = ctypes.c_void_p
    lib.glfs_creat.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_uint]
    lib.glfs_read.restype = ctypes.c_ssize_t
    lib.glfs_read.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.glfs_write.restype = ctypes.c_ssize_t
    lib.glfs_write.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    lib.glfs_fchmod.argtypes = [ctypes.c_void_p, ctypes.c_uint]
    lib.glfs_close.argtypes = [ctypes.c_void_p]
    lib.glfs_mknod.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint, ctypes.c_uint64]
    lib.glfs_setfspid.argtypes = [ctypes.c_void_p, ctypes.c_int]

    def err():
        return os.strerror(ctypes.get_errno())

    signal.alarm(40)  # a TLS refusal may leave glfs_init retrying
    fs = lib.glfs_new(volume.encode())
    if not fs:
        say("init", False, "glfs_new: " + err())
        return
    lib.glfs_set_volfile_server(fs, b"tcp", server.encode(), 24007)
    lib.glfs_set_logging(fs, b"/dev/null", 1)
    if lib.glfs_init(fs) != 0:
        say("init", False, "glfs_init: " + err())
        return
    say("init", True, "glfs_init got the volume's layout")
    # Root's identity, and a pid that Gluster's own clients use.
    lib.glfs_setfsuid(0)
    lib.glfs_setfsgid(0)
    lib.glfs_setfspid(fs, -1)

    d = lib.glfs_opendir(fs, b"/")
    names = []
    if d:
        while True:
            ent = lib.glfs_readdir(d)
            if not ent:
                break
            name = ctypes.string_at(ent + 19).decode(errors="replace")  # struct dirent's d_name
            if name not in (".", ".."):
                names.append(name)
        lib.glfs_close(d)
    say("list", bool(names), f"{len(names)} names: {' '.join(sorted(names)[:5])}" if d else "glfs_opendir: " + err())

    buf = ctypes.create_string_buffer(4096)
    read = False
    for n in names:
        f = lib.glfs_open(fs, ("/" + n).encode(), os.O_RDONLY)
        if f:
            got = lib.glfs_read(f, buf, len(buf), 0)
            lib.glfs_close(f)
            if got > 0:
                say("read", True, f"{got} bytes of /{n}")
                read = True
                break
    if not read:
        say("read", False, "no file could be read")

    path = f"/{PROBE}-suid".encode()
    f = lib.glfs_creat(fs, path, os.O_WRONLY | os.O_TRUNC, 0o755)
    if not f:
        say("write", False, "glfs_creat: " + err())
    else:
        data = b"#!/bin/sh\nid -u\n"
        wrote = lib.glfs_write(f, data, len(data), 0)
        chmod = lib.glfs_fchmod(f, 0o4755)
        closed = lib.glfs_close(f)
        say("write", wrote == len(data) and closed == 0,
            f"wrote {wrote} bytes, fchmod 4755 {'ok' if chmod == 0 else 'failed'}, close {'ok' if closed == 0 else err()}")

    dev = lib.glfs_mknod(fs, f"/{PROBE}-dev".encode(), stat.S_IFBLK | 0o666, os.makedev(7, 0))
    say("mknod", dev == 0, "a block device made" if dev == 0 else "glfs_mknod: " + err())


def xdr_string(s):
    b = s.encode()
    return struct.pack(">I", len(b)) + b + b"\0" * (-len(b) % 4)


def signout(server, brick, port):
    """glusterd's port mapper SIGNOUT (program 34123456, version 1, procedure 5)."""
    args = xdr_string(brick) + struct.pack(">ii", port, 0)
    call = struct.pack(">IIIIII", 0x5253410a, 0, 2, 34123456, 1, 5) + struct.pack(">IIII", 0, 0, 0, 0) + args
    try:
        with socket.create_connection((server, 24007), timeout=10) as s:
            s.sendall(struct.pack(">I", 0x80000000 | len(call)) + call)
            reply = s.recv(4096)
    except OSError as e:
        say("signout", False, f"no connection: {e}")
        return
    if len(reply) < 32:
        say("signout", False, f"glusterd answered {len(reply)} bytes: no RPC reply")
        return
    op_ret, op_errno = struct.unpack(">ii", reply[-8:])
    say("signout", op_ret == 0, f"glusterd answered op_ret {op_ret}, op_errno {op_errno}")


def alarm(_sig, _frame):
    say("timeout", False, "no answer within 40 s: nothing got through")
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, alarm)
    sys.exit(main())
