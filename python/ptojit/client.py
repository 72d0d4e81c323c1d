"""A client of the ptojit daemon, speaking its protocol on the Unix socket.

``Client(cache_dir=None).build(request)`` returns what ``ptojit build --json``
prints for the request, without starting a process per build: the request
goes to the daemon that owns the cache directory, which is started through
the ``ptojit`` executable (``ptojit daemon start``, race-free) when none
answers.

The protocol (package api of ptojit, version 2): each message is a frame, a
4-byte little-endian length and that many bytes of JSON. The client sends
``{"protocol": 2, "op": "run", "args": [...], "dir": cwd, "env": [...],
"stdin": base64}`` and reads frames until the reply: a reply not ready within
50 ms is preceded by ``{"frame": "accepted"}`` and then ``{"frame":
"progress", "doing": ..., "fraction": ...}`` at least every 5 s; the reply
(no "frame") is ``{"protocol": 2, "stdout": base64, "stderr": base64, "exit":
n, "error": "...", "kind": "...", "data": {...}}``. A build request adds
``"stdout_json": true``: the daemon then sends the output of ``build --json``
as a JSON value, ``"stdout_value"``, in place of ``"stdout"``, so the reply
is decoded once (a daemon without the field sends ``"stdout"``). A connection carries
requests in turn: a Client keeps one and sends its requests on it, one at a
time (a thread that finds it in use opens one of its own for its request),
and when the daemon has closed it meanwhile (its idle bound, a restart) sends
the request once more on a new one. ``Client.close()`` closes it. A daemon
that sends no frame for the no-answer bound (``Client(no_answer=...)``, else
PTOJIT_DAEMON_TIMEOUT, else the bound of the daemon's settings that its hello
file records, else 30 s) raises DaemonNotAnswering naming its pid and log; with ``Client(fallback="engine")``
a build or key request then runs in the engine's own process instead
(``ptojit`` with PTOJIT_DAEMON=0: uncached, since the silent daemon holds the
store). A daemon of protocol 1 (an older install left running) is asked to
stop in its own protocol and a daemon of this version is started.

Before it connects, the client checks the daemon directory (a directory, not
a symbolic link, owned by this user, not writable by group or others) and
the socket (a socket, not a symbolic link, owned by this user); after it
connects, it checks with SO_PEERCRED that the daemon runs as this user. Any
failed check raises DaemonSecurityError and nothing is sent. The checks are
made for every connection; the requests a kept connection carries go to the
daemon checked when it was made.

Of the caller's environment, a request carries only the variables the
daemon names in its hello reply (``{"op": "hello"}`` answers ``{"env_names":
[...], "pid": n}``: those of ptojit's environment registry and those its
settings file's pass_env lists), plus those the caller's PTOJIT_PASS_ENV
lists, so the client keeps no copy of the registry. The daemon also writes
that reply to hello.json in its directory, with the stamp of the settings
file it read; the client uses the file when it names the pid of the daemon
that accepted the connection (SO_PEERCRED) and the settings file still has
that stamp, and otherwise asks. A daemon that writes no such file is asked
once: the client remembers its names under its pid and start time (/proc).
"""

from __future__ import annotations

import base64
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, NamedTuple, Union

__all__ = [
    "Client",
    "PtojitError",
    "BuildError",
    "DaemonError",
    "DaemonSecurityError",
    "DaemonNotAnswering",
    "build",
    "default_cache_dir",
    "daemon_dir",
]

PROTOCOL = 2
# The no-answer bound (client.DefaultNoAnswer) and the variable that sets it
# (client.NoAnswerVariable, a Go duration such as "45s" or "1m30s").
DEFAULT_NO_ANSWER = 30.0
NO_ANSWER_VARIABLE = "PTOJIT_DAEMON_TIMEOUT"
LOG_NAME = "daemon.log"
MAX_REQUEST = 64 << 20
MAX_RESPONSE = 256 << 20
SOCKET_NAME = "daemon.sock"
# The daemon's hello reply as a file in its directory (api.HelloName).
HELLO_NAME = "hello.json"
# Extra variables a request carries (client.PassEnvVariable).
PASS_ENV_VARIABLE = "PTOJIT_PASS_ENV"
_MAX_SOCKET_PATH = 107
# ``ptojit daemon start`` waits for the daemon's readiness signal; this only
# bounds a start that never finishes.
START_TIMEOUT = 300.0

Request = Union[Mapping[str, Any], str, "os.PathLike[str]"]


class PtojitError(Exception):
    """A failed request: status is the response's status ("error" for a
    build, or the kind of failure) and message its message."""

    def __init__(self, status: str, message: str, response: Any = None) -> None:
        super().__init__(f"{status}: {message}" if status else message)
        self.status = status
        self.message = message
        self.response = response


class BuildError(PtojitError):
    """A command the daemon ran failed: response holds its JSON output, if
    any, and exit its exit code."""

    def __init__(self, status: str, message: str, response: Any = None, exit: int = 1) -> None:
        super().__init__(status, message, response)
        self.exit = exit


class DaemonError(PtojitError):
    """The daemon could not be reached, started, or understood."""

    def __init__(self, message: str) -> None:
        super().__init__("daemon", message)


class DaemonSecurityError(DaemonError):
    """The daemon directory, its socket or the daemon itself is not this
    user's: nothing was sent."""


class DaemonNotAnswering(DaemonError):
    """The daemon accepted the connection but sent nothing for the
    no-answer bound (it is stopped or hung): pid and log name it."""

    def __init__(self, pid: int, log: str, bound: float) -> None:
        super().__init__(_failure_text({"kind": "not_answering", "data": {"pid": str(pid), "log": log, "bound": _go_duration(bound)}}))
        self.pid = pid
        self.log = log
        self.bound = bound


class _NoDaemon(Exception):
    pass


class _OldDaemon(Exception):
    def __init__(self, version: Any, pid: int) -> None:
        super().__init__(_failure_text({"kind": "protocol", "data": {"pid": str(pid), "daemon": str(version), "client": str(PROTOCOL)}}))
        self.version = version
        self.pid = pid


class _DaemonLost(Exception):
    pass


class _Closed(Exception):
    """A kept connection the daemon closed before it read the request."""


def default_cache_dir(environ: Mapping[str, str] | None = None, cwd: str | None = None) -> str:
    """The cache directory the Go client uses: PTOJIT_CACHE_DIR, else
    $XDG_CACHE_HOME/ptojit, else $HOME/.cache/ptojit (relative XDG_CACHE_HOME
    and HOME ignored), made absolute and clean."""
    env = os.environ if environ is None else environ
    d = env.get("PTOJIT_CACHE_DIR", "")
    if not d:
        xdg, home = env.get("XDG_CACHE_HOME", ""), env.get("HOME", "")
        if os.path.isabs(xdg):
            d = os.path.join(xdg, "ptojit")
        elif os.path.isabs(home):
            d = os.path.join(home, ".cache", "ptojit")
        else:
            raise DaemonError("no cache directory: set PTOJIT_CACHE_DIR, XDG_CACHE_HOME or HOME")
    return _clean(d, cwd)


def _clean(p: str, cwd: str | None) -> str:
    if not os.path.isabs(p):
        p = os.path.join(cwd or os.getcwd(), p)
    p = os.path.normpath(p)
    if p.startswith("//"):  # normpath keeps a leading "//"; Go's Clean does not
        p = "/" + p.lstrip("/")
    return p


def daemon_dir(cache: str, environ: Mapping[str, str] | None = None) -> str:
    """The daemon directory of a cache directory, as client.DaemonDir computes
    it: $XDG_RUNTIME_DIR/ptojit/<id>, else <cache>/daemon, else (a socket
    path too long) $TMPDIR/ptojit-<uid>/<id>."""
    env = os.environ if environ is None else environ
    ident = hashlib.sha256(os.fsencode(cache)).hexdigest()[:16]
    rt = env.get("XDG_RUNTIME_DIR", "")
    if rt and os.path.isabs(rt):
        return os.path.join(rt, "ptojit", ident)
    d = os.path.join(cache, "daemon")
    if len(os.fsencode(os.path.join(d, SOCKET_NAME))) <= _MAX_SOCKET_PATH:
        return d
    # Go's os.TempDir reads the process's own environment.
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"ptojit-{os.getuid()}", ident)


class _Conn:
    """A connection to the daemon, checked when it was made: pid is the
    daemon's (SO_PEERCRED), process the fork generation of the process that
    made it (a forked child makes its own). The socket blocks; the
    no-answer bound is its SO_RCVTIMEO and SO_SNDTIMEO (bound, the value set),
    so that a read or a write is one system call, with no poll before it.
    buf holds what was read beyond the last frame."""

    __slots__ = ("sock", "pid", "process", "bound", "buf")

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock, self.pid, self.process = sock, pid, _fork_generation
        self.bound: float | None = None
        self.buf = bytearray()

    def set_bound(self, seconds: float) -> None:
        """Make a read or write that waits longer than seconds fail with
        EAGAIN (the daemon is not answering)."""
        if self.bound == seconds:
            return
        _set_timeout(self.sock, socket.SO_RCVTIMEO, seconds)
        _set_timeout(self.sock, socket.SO_SNDTIMEO, seconds)
        self.bound = seconds

    def read(self, n: int) -> bytes:
        """The next n bytes, read in as few calls as the daemon allows
        (a reply's length and body usually come in one)."""
        buf = self.buf
        while len(buf) < n:
            chunk = self.sock.recv(max(n - len(buf), _READ_SIZE))
            if not chunk:
                raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
            buf += chunk
        out = bytes(buf[:n])
        del buf[:n]
        return out


def _set_timeout(sock: socket.socket, opt: int, seconds: float) -> None:
    """Set the socket timeout opt (SO_RCVTIMEO or SO_SNDTIMEO) to seconds."""
    sec = int(seconds)
    tv = struct.pack("ll", sec, max(int((seconds - sec) * 1e6), 0 if sec else 1))
    sock.setsockopt(socket.SOL_SOCKET, opt, tv)


# What one read of the socket asks for at least: a hit's reply whole.
_READ_SIZE = 64 << 10

# Counts the forks of this process (os.register_at_fork): a connection
# made before a fork belongs to the parent, and a child makes its own.
_fork_generation = 0


def _forked() -> None:
    global _fork_generation
    _fork_generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


class _EnvPayload(NamedTuple):
    """The environment a request carried: the names, sorted (and as
    os.environ's bytes), their values as looked up, and the payload."""

    names: frozenset[str]
    keys: tuple[str, ...]
    raw: tuple[bytes, ...]
    values: tuple
    payload: list[str]


class Client:
    """A client of the daemon of one cache directory; safe to share between
    threads (one request at a time uses the kept connection, others one of
    their own).

    cache_dir: the cache directory (default: as ``ptojit`` chooses it).
    ptojit: the ``ptojit`` executable that starts a daemon when none
    answers (default: ``ptojit`` on PATH). environ: the environment whose
    registry variables requests carry (default: os.environ when a request is
    sent)."""

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] | None = None,
        *,
        ptojit: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
        no_answer: float | None = None,
        fallback: str | None = None,
    ) -> None:
        if fallback not in (None, "engine"):
            raise ValueError(f"fallback={fallback!r}: want None or \"engine\"")
        self._environ = environ
        self._fallback = fallback
        self._no_answer = no_answer
        env = self._env()
        self.cache_dir = _clean(os.fspath(cache_dir), None) if cache_dir is not None else default_cache_dir(env)
        self.daemon_dir = daemon_dir(self.cache_dir, env)
        self.socket_path = os.path.join(self.daemon_dir, SOCKET_NAME)
        self._ptojit = os.fspath(ptojit) if ptojit is not None else None
        if self._no_answer is None:
            self._no_answer = _duration(env.get(NO_ANSWER_VARIABLE, ""))
        # The bound of the daemon's settings, from its hello file.
        self._hello_bound: float | None = None
        self._conn: _Conn | None = None
        self._conn_lock = threading.Lock()  # held by the request using _conn
        self._start_lock = threading.Lock()
        # (pid, start time) of a daemon -> the names its hello listed.
        self._names: dict[tuple[int, int], frozenset[str]] = {}
        self._names_lock = threading.Lock()
        # The hello file last parsed: (its stat signature, its fields).
        self._hello_seen: tuple[tuple[int, ...], Any] | None = None
        # The environment payload last sent: (the names, their values,
        # the payload); a request whose values are the same reuses it.
        self._env_seen: _EnvPayload | None = None
        # The last request sent and its frame: the same request again (a
        # hit's, with the same environment payload) is not encoded again.
        self._frame_seen: tuple[dict, bytes] | None = None

    def _env(self) -> Mapping[str, str]:
        return os.environ if self._environ is None else self._environ

    @property
    def no_answer(self) -> float:
        """The no-answer bound in seconds: Client(no_answer=...), else
        PTOJIT_DAEMON_TIMEOUT, else the bound of the daemon's settings its
        hello file recorded when this client last read it, else 30 s."""
        if self._no_answer is not None:
            return self._no_answer
        return self._hello_bound if self._hello_bound is not None else DEFAULT_NO_ANSWER

    def close(self) -> None:
        """Close the kept connection (the next request opens another)."""
        with self._conn_lock:
            self._drop()

    def __del__(self) -> None:
        conn = getattr(self, "_conn", None)
        if conn is not None:
            conn.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the commands --------------------------------------------------

    def build(self, request: Request, cwd: str | os.PathLike[str] | None = None) -> dict:
        """Build a request (a dict, or the path of a request file) and
        return the response object of ``ptojit build --json``. A response
        whose status is "error" raises BuildError."""
        arg, stdin = _request_arg(request)
        code, out, err = self._run(["build", "--request", arg, "--json", "--cache-dir", self.cache_dir], cwd, stdin, value=True)
        resp = _json_output(out, err, code)
        if code != 0 or resp.get("status") == "error":
            raise BuildError(resp.get("status") or "error", resp.get("error") or _text(err), resp, code)
        return resp

    def key(self, request: Request, cwd: str | os.PathLike[str] | None = None) -> dict:
        """The key report of ``ptojit key --json``: the key, every input
        with its digest, and why the identity is unavailable (then "usable"
        is false; that is no error)."""
        arg, stdin = _request_arg(request)
        code, out, err = self._run(["key", "--request", arg, "--json"], cwd, stdin)
        if not out.strip():
            raise BuildError("error", _text(err) or f"ptojit key exited {code}", None, code)
        rep = _json_output(out, err, code)
        if code not in (0, 1):
            raise BuildError("error", _text(err), rep, code)
        return rep

    def key_diff(self, a: Request, b: Request, cwd: str | os.PathLike[str] | None = None) -> list:
        """The inputs that differ between two keys, as ``ptojit key diff
        --json`` lists them ([{"name", "a", "b"}...], the values as JSON
        values; empty when nothing differs). a and b are request files or
        keys of stored entries (or unique prefixes of 4+ hex digits), or
        request dicts (read with key(), relative paths against cwd)."""
        if not isinstance(a, Mapping) and not isinstance(b, Mapping):
            code, out, err = self._run(["key", "diff", os.fspath(a), os.fspath(b), "--json", "--cache-dir", self.cache_dir], cwd, None)
            if code not in (0, 1):  # 1: inputs differ, as diff(1)
                raise BuildError("error", _text(err) or f"ptojit key diff exited {code}", None, code)
            return _json_output(out, err, code)
        ra, rb = self.key(a, cwd), self.key(b, cwd)
        return _diff_inputs(ra.get("inputs") or [], rb.get("inputs") or [])

    def stats(self) -> dict:
        """The cache's counters and size (``ptojit cache stats --json``)."""
        code, out, err = self._run(["cache", "stats", "--json", "--cache-dir", self.cache_dir], None, None)
        if code != 0:
            raise BuildError("error", _text(err) or f"ptojit cache stats exited {code}", None, code)
        return _json_output(out, err, code)

    def ping(self) -> int:
        """The daemon's pid, starting the daemon when none answers."""
        return int(self._call({"op": "ping"}).get("pid") or 0)

    # --- environment ---------------------------------------------------

    def forwarded_variables(self) -> frozenset[str]:
        """The names of the environment variables a request carries: those
        the daemon lists in its hello reply (the variables of ptojit's
        environment registry). Starts the daemon when none answers."""
        resp = self._call({"op": "hello"})
        return self._hello_names(resp)

    def _hello_names(self, resp: dict) -> frozenset[str]:
        names = resp.get("env_names")
        if resp.get("error") or not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise DaemonError(
                f"the running daemon (pid {resp.get('pid')}) does not answer \"hello\" ({resp.get('error') or 'no env_names'}): "
                "it predates this client; stop it with \"ptojit daemon stop\"")
        return frozenset(names)

    def _hello_file(self, pid: int) -> tuple[frozenset[str] | None, bool]:
        """The names of the daemon's hello file when it is the file of the
        daemon with this pid and still current (the settings file it
        depends on has the stamp it recorded), and whether the file was
        that daemon's at all."""
        h = self._hello_fields()
        if h is None or h[0] != pid:
            return None, False
        _, names, dep, dep_stamp, bound = h
        if dep and _file_stamp(dep) != dep_stamp:
            return None, True
        self._hello_bound = bound
        return names, True

    def _hello_fields(self) -> tuple[Any, frozenset[str], Any, Any, float | None] | None:
        """The hello file's pid, names, settings file, its stamp and the
        bound (None when the file is missing or not of this protocol). The
        file is parsed again only when its stat signature changed: the
        daemon replaces it (a new inode), and one written in the last
        second is parsed every time, as its times may not tell a rewrite
        within their resolution."""
        path = os.path.join(self.daemon_dir, HELLO_NAME)
        try:
            st = os.stat(path)
        except OSError:
            return None
        sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        seen = self._hello_seen
        if seen is not None and seen[0] == sig:
            return seen[1]
        try:
            with open(path, "rb") as f:
                h = json.loads(f.read(1 << 20))
        except (OSError, ValueError):
            return None
        fields = None
        names = h.get("env_names") if isinstance(h, dict) else None
        if isinstance(h, dict) and h.get("protocol") == PROTOCOL and isinstance(names, list) and all(isinstance(n, str) for n in names):
            bound = h.get("no_answer")
            fields = (h.get("pid"), frozenset(names), h.get("depends"), h.get("depends_stamp"),
                      _duration(bound) if isinstance(bound, str) else None)
        if time.time_ns() - st.st_mtime_ns > 1_000_000_000:
            self._hello_seen = (sig, fields)
        return fields

    def _names_for(self, pid: int, ask: Any) -> frozenset[str]:
        """The hello names of the daemon with this pid: from its hello file
        when that is current, else asked with ask(request) on the
        connection (remembered only for a daemon that writes no hello
        file)."""
        names, has_file = self._hello_file(pid)
        if names is not None:
            return names
        if has_file:
            # The settings changed since the daemon wrote the file: its
            # answer rewrites the file, which then has the settings' bound.
            resp = ask({"op": "hello"})
            names = self._hello_names(resp)
            if resp.get("pid") != pid:
                raise _DaemonLost(f"the daemon changed (pid {pid}, then {resp.get('pid')})")
            self._hello_file(pid)
            return names
        key = (pid, _start_time(pid))
        if key[1] is not None:
            with self._names_lock:
                names = self._names.get(key)
            if names is not None:
                return names
        resp = ask({"op": "hello"})
        names = self._hello_names(resp)
        if resp.get("pid") != pid:
            raise _DaemonLost(f"the daemon changed (pid {pid}, then {resp.get('pid')})")
        if key[1] is not None:
            with self._names_lock:
                self._names[key] = names
        return names

    def _forwarded_env(self, names: frozenset[str]) -> list[str]:
        # The daemon's names, plus those this client's PTOJIT_PASS_ENV
        # adds (client.PassEnvFrom). Looked up by name: iterating os.environ
        # decodes every variable. The payload is built again only when a
        # name or a value changed since the last request.
        env = self._env()
        names = names | _pass_env_names(env.get(PASS_ENV_VARIABLE, ""))
        seen = self._env_seen
        if seen is not None and seen.names == names:
            keys, raw = seen.keys, seen.raw
        else:
            keys = tuple(sorted(names))
            raw = tuple(os.fsencode(k) for k in keys)
        data = getattr(env, "_data", None) if env is os.environ else None
        if isinstance(data, dict):
            # os.environ's own bytes: nothing decoded to compare.
            values = tuple(map(data.get, raw))
        else:
            values = tuple(map(env.get, keys))
        if seen is not None and seen.names == names and seen.values == values:
            return seen.payload
        payload = [f"{k}={env[k]}" for k, v in zip(keys, values) if v is not None]
        self._env_seen = _EnvPayload(names, keys, raw, values, payload)
        return payload

    # --- the protocol --------------------------------------------------

    def _run(self, args: list[str], cwd: Any, stdin: bytes | None, value: bool = False) -> tuple[int, Any, bytes]:
        """Run args in the daemon: the exit code, the output and the error
        output. value: the output is JSON, and a daemon that sends it as a
        JSON value ("stdout_value", decoded with the reply) returns it as a
        _Value, not as bytes to decode again."""
        d = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()
        req: dict[str, Any] = {"op": "run", "args": args, "dir": d}
        if stdin is not None:
            req["stdin"] = base64.b64encode(stdin).decode("ascii")
        if value:
            req["stdout_json"] = True
        try:
            resp = self._call(req)
        except DaemonNotAnswering:
            if self._fallback != "engine" or args[0] not in ("build", "key"):
                raise
            return self._run_engine(args, d, stdin)
        out: Any = _Value(resp["stdout_value"]) if "stdout_value" in resp else base64.b64decode(resp.get("stdout") or "")
        err = base64.b64decode(resp.get("stderr") or "")
        code = int(resp.get("exit") or 0)
        e = _reply_error(resp)
        if e is not None:
            raise e
        return code, out, err

    def _run_engine(self, args: list[str], cwd: str, stdin: bytes | None) -> tuple[int, bytes, bytes]:
        """Run args in the engine's own process (PTOJIT_DAEMON=0), with the
        same request: the fallback of a daemon that does not answer."""
        exe = self._ptojit_exe()
        try:
            p = subprocess.run([exe, *args], cwd=cwd, input=stdin if stdin is not None else b"",
                               capture_output=True, env=dict(self._env(), PTOJIT_DAEMON="0"))
        except OSError as e:
            raise DaemonError(f"running {exe} in-process: {e}") from None
        return p.returncode, p.stdout, p.stderr

    def _call(self, req: dict) -> dict:
        """Send req, starting a daemon when none answers, and once more to a
        new daemon when one dies without answering (every request the
        daemon serves can be repeated)."""
        started = resent = replaced = False
        while True:
            try:
                return self._call_once(req, with_env=req.get("op") == "run")
            except _OldDaemon as e:
                if replaced or not isinstance(e.version, int) or e.version > PROTOCOL:
                    raise DaemonError(f"{e}; run the client of the daemon's install, or stop the daemon (kill {e.pid})") from None
                # A daemon of an older install: stop it, start ours.
                replaced = True
                self._stop_version(e.version, e.pid)
            except _NoDaemon as e:
                if started:
                    raise DaemonError(f"the daemon started but does not answer on {self.socket_path}: {e}") from None
            except _DaemonLost as e:
                if resent:
                    raise DaemonError(f"the daemon closed the connection without answering, twice ({e})") from None
                resent = True
            started = True
            self._start_daemon()

    def _check_dir(self) -> None:
        try:
            st = os.lstat(self.daemon_dir)
        except FileNotFoundError:
            raise _NoDaemon(f"no daemon directory {self.daemon_dir}") from None
        uid = os.getuid()
        if stat.S_ISLNK(st.st_mode):
            raise DaemonSecurityError(f"daemon directory {self.daemon_dir} is a symbolic link")
        if not stat.S_ISDIR(st.st_mode):
            raise DaemonSecurityError(f"daemon directory {self.daemon_dir} is not a directory")
        if st.st_uid != uid:
            raise DaemonSecurityError(f"daemon directory {self.daemon_dir} is owned by uid {st.st_uid}, not {uid}")
        if st.st_mode & 0o022:
            raise DaemonSecurityError(f"daemon directory {self.daemon_dir} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})")
        try:
            st = os.lstat(self.socket_path)
        except FileNotFoundError:
            raise _NoDaemon(f"no socket {self.socket_path}") from None
        if stat.S_ISLNK(st.st_mode):
            raise DaemonSecurityError(f"daemon socket {self.socket_path} is a symbolic link")
        if not stat.S_ISSOCK(st.st_mode):
            raise DaemonSecurityError(f"daemon socket {self.socket_path} is not a socket")
        if st.st_uid != uid:
            raise DaemonSecurityError(f"daemon socket {self.socket_path} is owned by uid {st.st_uid}, not {uid}")

    def _call_once(self, req: dict, with_env: bool = False) -> dict:
        """One request, on the kept connection when no other request uses
        it (once more on a new connection when the daemon closed it
        before reading the request), else on a connection of its own;
        with_env adds the variables of the environment that the
        answering daemon's hello names."""
        if not self._conn_lock.acquire(blocking=False):
            conn = self._connect()
            try:
                return self._exchange(conn, req, with_env, False)
            finally:
                conn.sock.close()
        try:
            conn = self._conn
            if conn is not None and conn.process == _fork_generation:
                try:
                    return self._exchange(conn, req, with_env, True)
                except _Closed:
                    pass
            self._drop()
            self._conn = self._connect()
            return self._exchange(self._conn, req, with_env, False)
        except BaseException:
            self._drop()  # in an unknown state
            raise
        finally:
            self._conn_lock.release()

    def _drop(self) -> None:
        """Close the kept connection (the caller holds _conn_lock)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.sock.close()

    def _connect(self) -> _Conn:
        """A new connection to the daemon, checked: the directory and the
        socket before, SO_PEERCRED after."""
        self._check_dir()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            # Linux bounds a connect by SO_SNDTIMEO: a daemon whose listen
            # queue is full (it accepts nothing) is not answering.
            _set_timeout(sock, socket.SO_SNDTIMEO, self.no_answer)
            try:
                sock.connect(self.socket_path)
            except BlockingIOError:
                raise DaemonNotAnswering(0, os.path.join(self.daemon_dir, LOG_NAME), self.no_answer) from None
            except OSError as e:
                if e.errno in (errno.ENOENT, errno.ECONNREFUSED):
                    raise _NoDaemon(str(e)) from None
                raise DaemonError(f"connecting to {self.socket_path}: {e}") from None
            return _Conn(sock, _check_peer(sock))
        except BaseException:
            sock.close()
            raise

    def _exchange(self, conn: _Conn, req: dict, with_env: bool, kept: bool) -> dict:
        """req on conn, after the hello request it needs; kept: conn
        carried requests before, so the daemon may have closed it (the
        first request then raises _Closed, not _DaemonLost)."""
        closable = [kept]

        def ask(r: dict) -> dict:
            resp = self._roundtrip(conn, r, closable[0])
            closable[0] = False
            return resp

        if with_env:
            req = dict(req, env=self._forwarded_env(self._names_for(conn.pid, ask)))
        return ask(req)

    def _roundtrip(self, conn: _Conn, req: dict, closable: bool) -> dict:
        """Send req and read frames until the reply."""
        seen = self._frame_seen
        if seen is not None and seen[0] == req:
            body = seen[1]  # the request the last one was: its bytes
        else:
            body = _frame(req)
            self._frame_seen = (req, body)
        # A daemon that refuses the peer replies before reading the
        # request: a failed write is judged by whether a reply follows.
        conn.set_bound(self.no_answer)
        try:
            conn.sock.sendall(body)
        except BlockingIOError:  # SO_SNDTIMEO: the bound passed
            raise DaemonNotAnswering(conn.pid, os.path.join(self.daemon_dir, LOG_NAME), self.no_answer) from None
        except OSError:
            if closable:
                raise _Closed() from None
        while True:
            resp = self._read_frame(conn, closable)
            closable = False
            if not isinstance(resp, dict) or resp.get("protocol") != PROTOCOL:
                got = resp.get("protocol") if isinstance(resp, dict) else None
                raise _OldDaemon(got, conn.pid)
            if not resp.get("frame"):
                return resp
            # accepted or progress: the daemon works on it; the bound
            # restarts.

    def _read_frame(self, conn: _Conn, closable: bool = False) -> Any:
        """One frame; closable: a connection closed before its first byte
        is _Closed."""
        try:
            try:
                head = conn.read(4)
            except ConnectionResetError:
                if closable:
                    raise _Closed() from None
                raise
            except EOFError:
                if closable and not conn.buf:
                    raise _Closed() from None
                raise
            (n,) = struct.unpack("<I", head)
            if n > MAX_RESPONSE:
                raise DaemonError(f"response frame of {n} bytes is over the limit of {MAX_RESPONSE}")
            frame = conn.read(n)
        except BlockingIOError:  # SO_RCVTIMEO: the bound passed
            raise DaemonNotAnswering(conn.pid, os.path.join(self.daemon_dir, LOG_NAME), self.no_answer) from None
        except (EOFError, ConnectionResetError, BrokenPipeError) as e:
            raise _DaemonLost(str(e)) from None
        try:
            return json.loads(frame)
        except ValueError as e:
            raise DaemonError(f"daemon protocol: bad frame: {e}") from None

    def _stop_version(self, version: int, pid: int) -> None:
        """Ask the daemon of an older protocol version to stop, in that
        version's request shape, and wait (the no-answer bound) until its
        lock is free."""
        self._check_dir()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            _set_timeout(sock, socket.SO_SNDTIMEO, self.no_answer)  # bounds the connect too
            sock.connect(self.socket_path)
            conn = _Conn(sock, _check_peer(sock))
            conn.set_bound(self.no_answer)
            body = json.dumps({"protocol": version, "op": "stop"}, separators=(",", ":")).encode("utf-8")
            sock.sendall(struct.pack("<I", len(body)) + body)
            self._read_frame(conn)
        except (OSError, _DaemonLost) as e:
            raise DaemonError(f"stopping the protocol-{version} daemon (pid {pid}): {e}; stop it with kill {pid}") from None
        finally:
            sock.close()
        import fcntl
        import time

        deadline = time.monotonic() + self.no_answer
        try:
            fd = os.open(os.path.join(self.daemon_dir, "daemon.lock"), os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise DaemonError(f"the protocol-{version} daemon (pid {pid}) did not exit within {self.no_answer:g} s of its stop") from None
                    time.sleep(0.05)
        finally:
            os.close(fd)

    def _ptojit_exe(self) -> str:
        if self._ptojit:
            return self._ptojit
        exe = shutil.which("ptojit", path=self._env().get("PATH"))
        if not exe:
            raise DaemonError("no daemon answers and the ptojit executable that starts one is not on PATH; pass Client(ptojit=...)")
        return exe

    def _start_daemon(self) -> None:
        # ``ptojit daemon start`` serializes with every other client on the
        # daemon directory's start lock; the lock here only spares threads
        # of this process from starting ptojit at once.
        with self._start_lock:
            try:
                self._check_dir()
                if self._ping_quiet():
                    return
            except (_NoDaemon, _DaemonLost, _OldDaemon):
                pass
            exe = self._ptojit_exe()
            try:
                p = subprocess.run(
                    [exe, "daemon", "start", "--cache-dir", self.cache_dir],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    env=dict(self._env()),
                    timeout=START_TIMEOUT,
                )
            except subprocess.TimeoutExpired:
                raise DaemonError(f"ptojit daemon start did not finish in {START_TIMEOUT:.0f} s") from None
            except OSError as e:
                raise DaemonError(f"starting the daemon with {exe}: {e}") from None
            if p.returncode != 0:
                raise DaemonError(f"ptojit daemon start exited {p.returncode}: {_text(p.stderr)}")

    def _ping_quiet(self) -> bool:
        try:
            return not self._call_once({"op": "ping"}).get("error")
        except (_NoDaemon, _DaemonLost, _OldDaemon):
            return False


def _duration(v: str) -> float | None:
    """A positive Go duration of h, m, s and ms parts ("45s", "1m30s") in
    seconds, else None."""
    parts = re.findall(r"(\d+(?:\.\d*)?)(ms|h|m|s)", v)
    if not v or not parts or "".join(n + u for n, u in parts) != v:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    total = sum(float(n) * scale[u] for n, u in parts)
    return total if total > 0 else None


def _reply_error(resp: dict) -> "BuildError | None":
    """The error of a failed request's reply (one with a kind or an error),
    else None: its message composed by _failure_text from the kind and
    data, its exit code the command's, at least 1 (as the Go client's
    ReplyError)."""
    if not resp.get("error") and not resp.get("kind"):
        return None
    e = BuildError("error", "daemon: " + _failure_text(resp), None, max(int(resp.get("exit") or 0), 1))
    e.kind = resp.get("kind") or "internal"
    e.data = resp.get("data") or {}
    return e


def _failure_text(resp: dict) -> str:
    """The message of a failed reply, composed from its kind and data, never
    parsed from its error (as the Go client's FailureText, word for word)."""
    kind, d, err = resp.get("kind"), resp.get("data") or {}, str(resp.get("error") or "")
    if kind == "miss":
        return f"no entry {d.get('key', '')} in the cache"
    if kind == "damaged":
        return (f"the cache entry {d.get('key', '')} is damaged ({d.get('reason', '')}); "
                "`ptojit cache verify` removes damaged entries, and a build publishes it again")
    if kind == "refused":
        return _refused_text(d)
    if kind == "unavailable":
        return (f"the identity is unavailable: {d.get('component', '')}: {d.get('reason', '')} "
                "(the build would compile and not be cached)")
    if kind == "store_failure":
        return _store_failure_text(d)
    if kind == "not_answering":
        if d.get("pid", "") in ("", "0"):
            return (f"the daemon accepted no connection for {d.get('bound', '')}: it is not answering "
                    f"(stopped or hung; its log is {d.get('log', '')}; {NO_ANSWER_VARIABLE} sets the bound)")
        return (f"the daemon (pid {d.get('pid', '')}) sent nothing for {d.get('bound', '')}: it is not answering "
                f"(stopped or hung; its log is {d.get('log', '')}; {NO_ANSWER_VARIABLE} sets the bound)")
    if kind == "bad_request":
        if d.get("op"):
            return f"the daemon does not know the operation {_go_quote(d['op'])}: it is of another version; stop it with \"ptojit daemon stop\""
        if d.get("args"):
            return f"the daemon does not serve {_go_quote(d['args'])}"
        if d.get("dir"):
            return f"the request's working directory {_go_quote(d['dir'])} is not absolute"
        return "the daemon could not read the request: " + err
    if kind == "protocol":
        return f"the daemon (pid {d.get('pid', '')}) speaks protocol {d.get('daemon', '')}, this client {d.get('client', '')}"
    if kind == "shutdown":
        return "the daemon stopped before it answered: " + err
    return "the daemon failed: " + err + "; its log says more (ptojit daemon status names it)"


def _refused_text(d: dict) -> str:
    if d.get("max_connections"):
        return f"the daemon refused the connection: it has {d['max_connections']} open, its limit; try again"
    if d.get("uid"):
        return f"the daemon refused this client (uid {d['uid']}): it serves only its own user"
    path, dir = d.get("path", ""), d.get("dir", "")
    what = "cache directory " + path
    if not dir:
        dir = path
    elif dir != path:
        what = f"file {path} of cache directory {dir}"
    owner, user = d.get("owner", ""), d.get("user", "")
    why = "owned by another user" if owner != user else "writable by group or others"
    return (f"{what} is owned by uid {owner} with mode {d.get('mode', '')}: {why}, so anyone who can write it could forge a cache entry; "
            f"ptojit uses only a cache its own user (uid {user}) owns and alone can write; make it the user's own (`chown -R {user} {dir} && chmod 700 {dir}`; "
            "remove files other users left there), or set PTOJIT_CACHE_DIR to a directory of your own; to share a cache between users, "
            "share it through a remote tier (PTOJIT_REMOTE), not a shared directory")


def _store_failure_text(d: dict) -> str:
    path = d.get("path", "")
    if d.get("holder") == "daemon":
        who = "the ptojit daemon"
        if d.get("pid") and d.get("since"):
            who += f" (pid {d['pid']}, running since {d['since']})"
        elif d.get("pid"):
            who += f" (pid {d['pid']})"
        return (f"the cache {path} is in use by another process: {who}; stop it with \"ptojit daemon stop\", "
                "or run without --no-daemon and PTOJIT_DAEMON=0 to use it; or pass --wait to wait for it")
    if d.get("holder") == "in_process":
        return (f"the cache {path} is in use by another process: a ptojit command running in-process (PTOJIT_DAEMON=0 or --no-daemon), "
                "which releases it when it finishes; or pass --wait to wait for it")
    return f"the cache {path} is unusable: {d.get('reason', '')}"


def _go_duration(sec: float) -> str:
    """sec seconds written as Go's time.Duration String writes them
    ("500ms", "30s", "1m30s", "1h0m0s")."""
    ns = round(sec * 1e9)
    if ns == 0:
        return "0s"
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size or unit == "ns":
                return sign + _trim_fraction(ns, size) + unit
    h, rest = divmod(ns, 3_600_000_000_000)
    m, rest = divmod(rest, 60_000_000_000)
    text = _trim_fraction(rest, 1_000_000_000) + "s"
    if h:
        return f"{sign}{h}h{m}m{text}"
    if m:
        return f"{sign}{m}m{text}"
    return sign + text


def _trim_fraction(n: int, size: int) -> str:
    whole, frac = divmod(n, size)
    if not frac:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def _go_quote(s: str) -> str:
    """s quoted as Go's %q quotes a printable string: in double quotes,
    with backslashes, quotes and control characters escaped."""
    out = []
    for ch in s:
        if ch in "\\\"":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _check_peer(sock: socket.socket) -> int:
    opt = getattr(socket, "SO_PEERCRED", None)
    if opt is None:
        raise DaemonSecurityError("this system has no SO_PEERCRED: the daemon's user cannot be checked")
    pid, uid, gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, opt, struct.calcsize("3i")))
    if uid != os.getuid():
        raise DaemonSecurityError(f"the daemon (pid {pid}) runs as uid {uid}, not {os.getuid()}")
    return pid


@functools.lru_cache(maxsize=64)
def _pass_env_names(v: str) -> frozenset[str]:
    """client.PassEnvNames: variable names separated by commas or white
    space; none at all when one is not a variable name."""
    names = [n for n in re.split(r"[, \t]+", v) if n]
    if not all(_VAR_NAME.fullmatch(n) for n in names):
        return frozenset()
    return frozenset(names)


_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _file_stamp(path: str) -> str:
    """api.FileStamp: size, modification time and (on Linux) device, inode
    and status change time of path, or "absent"."""
    try:
        st = os.stat(path)
    except OSError:
        return "absent"
    stamp = f"{st.st_size}:{st.st_mtime_ns}:"
    if sys.platform.startswith("linux"):
        stamp += f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns // 1_000_000_000}.{st.st_ctime_ns % 1_000_000_000}"
    return stamp


def _start_time(pid: int) -> int | None:
    """The start time of process pid (field 22 of /proc/<pid>/stat), which
    tells a daemon from a later one with the same pid; None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat_line = f.read()
        return int(stat_line[stat_line.rindex(b")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _frame(req: dict) -> bytes:
    """The frame of a request: its length and its JSON."""
    body = json.dumps(dict(req, protocol=PROTOCOL), separators=(",", ":")).encode("utf-8")
    if len(body) > MAX_REQUEST:
        raise DaemonError(f"request of {len(body)} bytes is over the limit of {MAX_REQUEST}")
    return struct.pack("<I", len(body)) + body


def _request_arg(request: Request) -> tuple[str, bytes | None]:
    if isinstance(request, Mapping):
        return "-", json.dumps(request).encode("utf-8")
    return os.fspath(request), None


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace").strip()


class _Value:
    """A command's JSON output, decoded with the daemon's reply."""

    __slots__ = ("v",)

    def __init__(self, v: Any) -> None:
        self.v = v


def _json_output(out: "bytes | _Value", err: bytes, code: int) -> Any:
    if isinstance(out, _Value):
        return out.v
    try:
        return json.loads(out)
    except ValueError:
        raise BuildError("error", _text(err) or f"the command printed no JSON (exit {code})", None, max(code, 1)) from None


def _diff_inputs(la: list, lb: list) -> list:
    """jit.DiffRecords over the inputs of two key reports."""
    mb = {x["name"]: x for x in lb}
    out, seen = [], set()
    for x in la:
        seen.add(x["name"])
        y = mb.get(x["name"])
        if y is None:
            out.append({"name": x["name"], "a": x["value"]})
        elif x["digest"] != y["digest"]:
            out.append({"name": x["name"], "a": x["value"], "b": y["value"]})
    out += [{"name": y["name"], "b": y["value"]} for y in lb if y["name"] not in seen]
    for d in out:  # "omitempty", as the Go side writes them
        for k in ("a", "b"):
            if d.get(k, None) == "":
                del d[k]
            elif k in d:
                d[k] = _json_value(d[k])
    return out


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)


def _json_value(shown: str) -> Any:
    """A displayed value as ptojit key diff --json prints it: the JSON value
    it spells, else the text itself (NaN, bytes, tuples)."""
    try:
        return json.loads(shown, parse_constant=_refuse_constant)
    except ValueError:
        return shown


_default: dict[str, Client] = {}
_default_lock = threading.Lock()


def build(request: Request, cwd: str | os.PathLike[str] | None = None, *, cache_dir: str | os.PathLike[str] | None = None) -> dict:
    """Client(cache_dir).build(request, cwd), with one Client per cache
    directory for the process."""
    key = os.fspath(cache_dir) if cache_dir is not None else ""
    with _default_lock:
        c = _default.get(key)
        if c is None:
            c = _default[key] = Client(cache_dir)
    return c.build(request, cwd)
