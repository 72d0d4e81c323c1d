# The Python SUB child loop of a ptojit Worker (LOCAL_PYTHON). It speaks the
# mailbox protocol of the worker package on descriptor 3 and maps the tensor
# arena from descriptor 4. A registered callable is a SPYC envelope around a
# cloudpickle payload; a task calls it as fn(tensors, scalars), where tensors
# are memoryviews into the arena and scalars are the raw 64-bit values.
import array
import fcntl
import hashlib
import mmap
import os
import socket
import struct
import sys

MAGIC = b"PJMB"
HDR = struct.Struct("<4sHHIIQ")
LAYOUT = 3  # the mailbox layout version (package mailbox's LayoutVersion)
TENSOR_REF = 88  # one tensor reference of the task-args blob
MAILBOX = 4096
REPLY = 0x8000
TASK, REGISTER, UNREGISTER, INIT, READY, NOP, SHUTDOWN = 1, 2, 3, 4, 5, 6, 7
OK, BAD_FRAME, MISMATCH, KIND_UNSUPPORTED, SLOT_EXHAUSTED, NOT_INSTALLED = 0, 1, 2, 3, 4, 5
PAYLOAD_INVALID, PREWARM_FAILED, EXEC_FAILED, ARGS_INVALID = 6, 8, 9, 10
DEBUG = 1
SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
FORMATS = {1: "f", 2: "i", 3: "e"}
ZERO = bytes(32)

sock = socket.socket(fileno=3)
state = {"id": 0, "flags": 0}
identity = {}  # digest -> slot
refs = {}  # digest -> refcount
slots = []  # slot -> (digest, payload sha256, fn) or None


def log(msg):
    if state["flags"] & DEBUG:
        sys.stderr.write("worker %d: %s\n" % (state["id"], msg))
        sys.stderr.flush()


def hashid(d):
    return "sha256:" + d.hex()


def recv():
    data, anc, flags, _ = sock.recvmsg(MAILBOX + 1, socket.CMSG_SPACE(16))
    fds = []
    for level, typ, cdata in anc:
        if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fds.extend(array.array("i", cdata[: len(cdata) - len(cdata) % 4]))
    return data, fds


def reply(op, status, digest=ZERO, detail=0, msg=""):
    m = msg.encode("utf-8", "replace")[:1024]
    args = digest + struct.pack("<III", detail, 0, len(m)) + m  # detail, stage, length
    sock.send(HDR.pack(MAGIC, LAYOUT, op | REPLY, status, len(args), 0) + args)


def answer(op, result):
    status, digest, msg = result
    reply(op, status, digest, msg=msg)


def parse(data):
    if len(data) < HDR.size or len(data) > MAILBOX:
        raise ValueError("frame of %d bytes" % len(data))
    magic, version, op, status, n, callable_ref = HDR.unpack_from(data)
    if magic != MAGIC or version != LAYOUT or status != 0 or callable_ref != 0 or n != len(data) - HDR.size:
        raise ValueError("malformed frame header")
    if op < TASK or op > SHUTDOWN:
        raise ValueError("unknown op %d" % op)
    return op, data[HDR.size:]


def descriptor_digest(spyc):
    if len(spyc) < 16 or spyc[:4] != b"SPYC":
        raise ValueError("not a SPYC envelope")
    version, serializer, flags, size = struct.unpack_from("<BBHQ", spyc, 4)
    if version != 1 or serializer != 1 or flags != 0 or size != len(spyc) - 16:
        raise ValueError("SPYC header version %d serializer %d flags %d size %d" % (version, serializer, flags, size))
    inner = spyc[16:]
    d = struct.pack("<IIIII", 1, 2, version, serializer, 32) + hashlib.sha256(inner).digest()
    return hashlib.sha256(d).digest(), inner


def read_staged(fd, n):
    if fcntl.fcntl(fd, fcntl.F_GET_SEALS) & SEALS != SEALS:
        raise ValueError("staged payload is not sealed")
    if os.fstat(fd).st_size != n:
        raise ValueError("staged payload size differs from the frame")
    if n == 0:
        return b""
    with mmap.mmap(fd, n, prot=mmap.PROT_READ) as m:
        return bytes(m)


def register(args, fds):
    if len(fds) != 1 or len(args) != 48:
        for fd in fds:
            os.close(fd)
        return BAD_FRAME, ZERO, "REGISTER_CALLABLE needs 48 bytes of args and one descriptor"
    digest = bytes(args[:32])
    kind, ref, n = struct.unpack_from("<IIQ", args, 32)
    try:
        payload = read_staged(fds[0], n)
    except (OSError, ValueError) as e:
        return PAYLOAD_INVALID, digest, str(e)
    finally:
        os.close(fds[0])
    if kind != 2:
        return KIND_UNSUPPORTED, digest, "SUB child does not resolve callable kind %d" % kind
    try:
        recomputed, inner = descriptor_digest(payload)
    except ValueError as e:
        return PAYLOAD_INVALID, digest, str(e)
    if recomputed != digest:
        return MISMATCH, digest, "recomputed descriptor has hashid " + hashid(recomputed)
    psha = hashlib.sha256(payload).digest()
    if digest in identity:
        if slots[identity[digest]][1] != psha:
            return MISMATCH, digest, "installed with another payload digest"
        refs[digest] += 1
        log("register %s: slot %d refs %d" % (hashid(digest), identity[digest], refs[digest]))
        return OK, digest, ""
    try:
        free = slots.index(None)
    except ValueError:
        return SLOT_EXHAUSTED, digest, "all %d local slots in use" % len(slots)
    try:
        try:
            import cloudpickle as loader
        except ImportError:
            import pickle as loader
        fn = loader.loads(inner)
    except Exception as e:
        return PREWARM_FAILED, digest, "unpickle: %s: %s" % (type(e).__name__, e)
    slots[free] = (digest, psha, fn)
    identity[digest] = free
    refs[digest] = 1
    log("register %s: slot %d refs 1" % (hashid(digest), free))
    return OK, digest, ""


def unregister(args):
    if len(args) != 32:
        return BAD_FRAME, ZERO, "UNREGISTER_CALLABLE needs a 32-byte digest"
    digest = bytes(args)
    if digest not in identity:
        return NOT_INSTALLED, digest, "hashid is not installed"
    refs[digest] -= 1
    if refs[digest] > 0:
        return OK, digest, ""
    slot = identity.pop(digest)  # resolution stops first
    del refs[digest]
    slots[slot] = None  # then the state and the slot go
    log("unregister %s: slot %d cleared" % (hashid(digest), slot))
    return OK, digest, ""


def task(args, mem):
    if len(args) < 40:
        return BAD_FRAME, ZERO, "task args lack the digest"
    digest = bytes(args[:32])
    slot = identity.get(digest)
    if slot is None:
        return NOT_INSTALLED, digest, "hashid is not installed"
    blob = args[32:]
    nt, ns = struct.unpack_from("<II", blob, 0)
    if nt > 64 or ns > 64 or len(blob) != 8 + TENSOR_REF * nt + 8 * ns:
        return BAD_FRAME, digest, "task args length does not match the counts"
    tensors = []
    for i in range(nt):
        off, nbytes, dtype, ndim = struct.unpack_from("<QQII", blob, 8 + TENSOR_REF * i)
        strides = struct.unpack_from("<4Q", blob, 8 + TENSOR_REF * i + 56)
        if off + nbytes > len(mem) or dtype not in FORMATS:
            return ARGS_INVALID, digest, "tensor %d lies outside the arena or has an unknown dtype" % i
        if any(strides):
            # A flat memoryview cannot carry them: refuse rather than ignore.
            return ARGS_INVALID, digest, "tensor %d has strides %s: a Python callable takes packed tensors" % (i, list(strides[:ndim]))
        tensors.append(memoryview(mem)[off:off + nbytes].cast(FORMATS[dtype]))
    scalars = list(struct.unpack_from("<%dQ" % ns, blob, 8 + TENSOR_REF * nt))
    log("task %s: slot %d" % (hashid(digest), slot))
    try:
        slots[slot][2](tensors, scalars)
    except Exception as e:
        return EXEC_FAILED, digest, "%s: %s" % (type(e).__name__, e)
    finally:
        for t in tensors:
            t.release()
    return OK, digest, ""


def main():
    data, fds = recv()
    op, args = parse(data)
    if op != INIT or len(args) < 32:
        sys.exit("first frame is not INIT")
    wid, role, nslots, flags, arena_size, slot_base, _ = struct.unpack_from("<IIIIQII", args)
    if role not in (2, 3):  # a SUB child, or a next-level Worker child's loop
        sys.exit("Python child started for role %d" % role)
    state["id"], state["flags"] = wid, flags
    slots.extend([None] * nslots)
    for i in range(min(slot_base, nslots)):
        slots[i] = (b"reserved", b"", None)
    mem = mmap.mmap(4, arena_size)
    reply(INIT, OK)
    while True:
        data, fds = recv()
        if not data:
            return
        try:
            op, args = parse(data)
        except ValueError as e:
            reply(NOP, BAD_FRAME, msg=str(e))
            continue
        if op == REGISTER:
            answer(op, register(args, fds))
            continue
        for fd in fds:
            os.close(fd)
        if fds:
            reply(op, BAD_FRAME, msg="unexpected descriptor")
        elif op == TASK:
            answer(op, task(args, mem))
        elif op == UNREGISTER:
            answer(op, unregister(args))
        elif op == READY:
            reply(op, OK, detail=len(identity))
        elif op in (NOP, INIT):
            reply(op, OK if op == NOP else BAD_FRAME)
        elif op == SHUTDOWN:
            reply(op, OK)
            return


main()
