"""ptojit.Client against a real daemon (the binaries of the tree)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

import ptojit
from ptojit import client as clientmod

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "testdata" / "examples"
DEADLINE = 120.0


@contextlib.contextmanager
def recording(record):
    """Calls record with each request a client sends (the JSON of each
    frame written to a socket), as the daemon reads it."""
    real = socket.socket.sendall

    def sendall(sock: socket.socket, data: bytes, *args: object) -> None:
        if len(data) >= 4 and int.from_bytes(data[:4], "little") == len(data) - 4:
            record(json.loads(data[4:]))
        return real(sock, data, *args)

    with mock.patch.object(socket.socket, "sendall", sendall):
        yield


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def binaries() -> tuple[str, str]:
    exe = os.environ.get("PTOJIT_BIN", "")
    if not exe or not os.path.exists(exe):
        if os.environ.get("PTOJIT_REQUIRE_BIN"):
            raise AssertionError("PTOJIT_BIN names no ptojit binary")
        raise unittest.SkipTest("PTOJIT_BIN names no ptojit binary (the Go test TestPython builds one)")
    return exe, os.path.join(os.path.dirname(exe), "ptojitd")


class DaemonTest(unittest.TestCase):
    """A fresh cache directory and a copy of the example per test; every
    daemon started is stopped at the end."""

    def setUp(self) -> None:
        self.exe, _ = binaries()
        self.tmp = Path(tempfile.mkdtemp(prefix="ptojit-py-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.examples = self.tmp / "examples"
        shutil.copytree(EXAMPLES, self.examples, ignore=shutil.ignore_patterns("out", "ptojit-out"))
        self.request = self.examples / "vadd" / "request.json"
        self.cache = str(self.tmp / "cache")
        # The daemon directory inside the test's own directory.
        self.environ = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
        self.environ["PTOJIT_CACHE_DIR"] = self.cache  # for the Go client's commands too
        self.addCleanup(self.stop_daemon)

    def client(self, **kw) -> ptojit.Client:
        return ptojit.Client(self.cache, ptojit=self.exe, environ=kw.pop("environ", self.environ), **kw)

    def stop_daemon(self) -> None:
        subprocess.run([self.exe, "daemon", "stop", "--cache-dir", self.cache], env=self.environ,
                       capture_output=True, timeout=DEADLINE)

    def go(self, *args: str, ok=(0,)) -> subprocess.CompletedProcess:
        p = subprocess.run([self.exe, *args], env=self.environ, capture_output=True, text=True,
                           timeout=DEADLINE, cwd=self.tmp)
        self.assertIn(p.returncode, ok, p.stderr)
        return p


def without_timings(r: dict) -> dict:
    return {k: v for k, v in r.items() if k != "timings"}


class TestClient(DaemonTest):
    def test_build_matches_the_go_client(self) -> None:
        c = self.client()
        first = c.build(self.request)
        self.assertEqual(first["status"], "miss", first)
        again = c.build(str(self.request))
        self.assertEqual(again["status"], "hit", again)
        go = json.loads(self.go("build", "--request", str(self.request), "--json", "--cache-dir", self.cache).stdout)
        self.assertEqual(go["status"], "hit")
        self.assertEqual(without_timings(again), without_timings(go))
        for o in again["outputs"]:
            self.assertTrue(os.path.isfile(o["path"]), o)

        # A dict request, relative paths against cwd.
        req = json.loads(self.request.read_text())
        r = c.build(req, cwd=self.request.parent)
        self.assertEqual((r["status"], r["key"], r["hashid"]), ("hit", go["key"], go["hashid"]))

        # key: the same report as ptojit key --json.
        rep = c.key(self.request)
        self.assertEqual(rep, json.loads(self.go("key", "--request", str(self.request), "--json").stdout))
        self.assertTrue(rep["usable"])
        self.assertEqual(rep["key"], go["key"])

        # key_diff: files through the daemon, dicts through key().
        req3 = dict(req, options={"opt_level": 3})
        f3 = self.request.parent / "request3.json"
        f3.write_text(json.dumps(req3))
        want = json.loads(self.go("key", "diff", str(self.request), str(f3), "--json", "--cache-dir", self.cache, ok=(1,)).stdout)
        self.assertEqual(want, [{"name": "options.opt_level", "a": 2, "b": 3}])
        self.assertEqual(c.key_diff(self.request, f3), want)
        self.assertEqual(c.key_diff(req, req3, cwd=self.request.parent), want)
        self.assertEqual(c.key_diff(self.request, go["key"]), [])

        st = c.stats()
        self.assertEqual((st["hits"], st["misses"]), (3, 1), st)
        self.assertEqual(st["dir"], self.cache)

    def test_module_level_build(self) -> None:
        # ptojit on PATH starts the daemon; the daemon directory is the
        # test's.
        path = os.path.dirname(self.exe) + os.pathsep + os.environ.get("PATH", "")
        with mock.patch.dict(os.environ, {"PATH": path, "PTOJIT_CACHE_DIR": self.cache}):
            os.environ.pop("XDG_RUNTIME_DIR", None)
            self.environ = dict(os.environ)
            r = ptojit.build(self.request, cache_dir=self.cache)
            self.assertEqual(r["status"], "miss", r)
            self.assertEqual(ptojit.build(self.request, cache_dir=self.cache)["status"], "hit")

    def test_errors_are_exceptions(self) -> None:
        c = self.client()
        req = json.loads(self.request.read_text())
        req["kernels"][0]["source"] = "missing.c"
        with self.assertRaises(ptojit.BuildError) as cm:
            c.build(req, cwd=self.request.parent)
        self.assertEqual(cm.exception.status, "error")
        self.assertIn("kernels[0].source", cm.exception.message)
        self.assertEqual(cm.exception.response["status"], "error")
        with self.assertRaises(ptojit.BuildError) as cm:
            c.build(self.tmp / "absent.json")
        self.assertIn("absent.json", cm.exception.message)

    def test_only_hello_names_are_sent(self) -> None:
        registry = json.loads((REPO / "_environment.json").read_text())
        environ = dict(self.environ, CC="gcc", SECRET_TOKEN="x", HOME="/root")
        c = self.client(environ=environ)
        self.assertEqual(c.forwarded_variables(), frozenset(registry["variables"]))
        sent, hellos = [], []

        def record(req: dict) -> None:
            if req.get("op") == "run":
                sent.append(req)
            elif req.get("op") == "hello":
                hellos.append(req)

        with recording(record):
            for _ in range(3):
                c.build(self.request)
        self.assertEqual(len(sent), 3)
        names = {kv.split("=", 1)[0] for kv in sent[0]["env"]}
        self.assertNotIn("SECRET_TOKEN", names)
        self.assertIn("CC=gcc", sent[0]["env"])
        self.assertEqual(names, {k for k in environ if k in registry["variables"]})
        # The names come from the daemon's hello file: no request asks
        # for them (the stamps of its settings file agree with Go's).
        self.assertEqual(len(hellos), 0, hellos)
        # A new daemon's file is read as well.
        self.stop_daemon()
        with recording(record):
            c.build(self.request)
        self.assertEqual(len(hellos), 0, hellos)
        self.assertNotIn("SECRET_TOKEN=x", sent[-1]["env"])

    def test_client_pass_env(self) -> None:
        environ = dict(self.environ, CCACHE_DIR="/nonexistent/ccache", OTHER="x", PTOJIT_PASS_ENV="CCACHE_DIR")
        sent = []

        def record(req: dict) -> None:
            if req.get("op") == "run":
                sent.append(req)

        with recording(record):
            self.client(environ=environ).build(self.request)
            self.client(environ=dict(environ, PTOJIT_PASS_ENV="CCACHE_DIR,1BAD")).build(self.request)
        self.assertIn("CCACHE_DIR=/nonexistent/ccache", sent[0]["env"])
        self.assertNotIn("OTHER=x", sent[0]["env"])
        # A list with a name that is not a variable name passes nothing, as
        # in the Go client.
        self.assertNotIn("CCACHE_DIR=/nonexistent/ccache", sent[1]["env"])

    def test_pass_env_change_is_seen(self) -> None:
        environ = dict(self.environ, CCACHE_DIR="/nonexistent/ccache")
        c = self.client(environ=environ)
        sent, hellos = [], []

        def record(req: dict) -> None:
            (sent if req.get("op") == "run" else hellos).append(req)

        with recording(record):
            c.build(self.request)
            self.assertNotIn("CCACHE_DIR=/nonexistent/ccache", sent[-1]["env"])
            # The settings file changes under a running client and daemon:
            # the next request carries the variable pass_env now names.
            self.go("config", "set", "pass_env", "CCACHE_DIR")
            c.build(self.request)
            self.assertIn("CCACHE_DIR=/nonexistent/ccache", sent[-1]["env"])
            asked = len(hellos)
            c.build(self.request)
            self.assertIn("CCACHE_DIR=/nonexistent/ccache", sent[-1]["env"])
        # One hello request when the file was out of date, none after the
        # daemon rewrote it.
        self.assertEqual(asked, 1, hellos)
        self.assertEqual(len(hellos), 1, hellos)

    def test_changed_value_is_sent(self) -> None:
        # The payload is reused while the values stay; a changed value, a
        # new variable and a removed one are each in the next request,
        # whether the client reads a mapping or os.environ itself.
        for own in (False, True):
            with self.subTest(os_environ=own), mock.patch.dict(os.environ, self.environ, clear=True):
                environ = os.environ if own else dict(self.environ)
                c = ptojit.Client(self.cache, ptojit=self.exe) if own else self.client(environ=environ)
                sent = []

                def record(req: dict) -> None:
                    if req.get("op") == "run":
                        sent.append(req["env"])

                with recording(record):
                    environ["CC"] = "gcc"
                    c.build(self.request)
                    c.build(self.request)
                    environ["CC"] = "cc"
                    environ["CXX"] = "g++"
                    c.build(self.request)
                    del environ["CC"]
                    c.build(self.request)
                self.assertIn("CC=gcc", sent[0])
                self.assertEqual(sent[0], sent[1])
                self.assertIn("CC=cc", sent[2])
                self.assertIn("CXX=g++", sent[2])
                self.assertNotIn("CC=gcc", sent[2])
                self.assertFalse(any(kv.startswith("CC=") for kv in sent[3]), sent[3])
                self.assertIn("CXX=g++", sent[3])
                c.close()

    def test_replaced_hello_file_is_read(self) -> None:
        # A hello file parsed once is not parsed again while its stat
        # data stay; the daemon replaces it, and the replacement is read.
        c = self.client(environ=dict(self.environ, CC="gcc"))
        c.build(self.request)
        hello = Path(c.daemon_dir) / clientmod.HELLO_NAME
        old = time.time() - 60
        os.utime(hello, (old, old))  # not written within the last second
        sent = []

        def record(req: dict) -> None:
            if req.get("op") == "run":
                sent.append(req["env"])

        with recording(record):
            c.build(self.request)
            c.build(self.request)
            h = json.loads(hello.read_text())
            h["env_names"] = [n for n in h["env_names"] if n != "CC"]
            tmp = hello.with_name(hello.name + ".tmp")
            tmp.write_text(json.dumps(h))
            os.utime(tmp, (old, old))
            os.replace(tmp, hello)
            c.build(self.request)
        self.assertIn("CC=gcc", sent[0])
        self.assertIn("CC=gcc", sent[1])
        self.assertNotIn("CC=gcc", sent[2])

    def test_concurrent_threads(self) -> None:
        c = self.client()
        results, errors = [], []

        def work() -> None:
            try:
                results.append(c.build(self.request))
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(DEADLINE)
            self.assertFalse(t.is_alive(), "a build did not finish")
        self.assertEqual(errors, [])
        self.assertEqual(len({r["hashid"] for r in results}), 1)
        self.assertTrue(all(r["status"] in ("miss", "hit") for r in results), [r["status"] for r in results])
        self.assertEqual(c.build(self.request)["status"], "hit")

    def test_concurrent_processes(self) -> None:
        code = (
            "import json, sys, ptojit\n"
            "c = ptojit.Client(sys.argv[1], ptojit=sys.argv[2], environ=json.loads(sys.argv[3]))\n"
            "print(c.build(sys.argv[4])['hashid'])\n"
        )
        env = dict(self.environ, PYTHONPATH=str(REPO / "python"))
        procs = [
            subprocess.Popen([sys.executable, "-c", code, self.cache, self.exe, json.dumps(self.environ), str(self.request)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(4)
        ]
        outs = []
        for p in procs:
            out, err = p.communicate(timeout=DEADLINE)
            self.assertEqual(p.returncode, 0, err)
            outs.append(out.strip())
        self.assertEqual(len(set(outs)), 1, outs)
        self.assertTrue(outs[0].startswith("sha256:"))

    def test_daemon_killed_mid_request(self) -> None:
        cc = shutil.which("gcc") or shutil.which("cc")
        if not cc:
            self.skipTest("no gcc or cc")
        block, started = self.tmp / "block", self.tmp / "started"
        wrapper = self.tmp / "cc-wrapper"
        wrapper.write_text(
            "#!/bin/sh\n"
            f"if [ -e '{block}' ]; then\n"
            f"  : > '{started}'\n"
            "  i=0\n"
            f"  while [ -e '{block}' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n"
            "fi\n"
            f"exec '{cc}' \"$@\"\n"
        )
        wrapper.chmod(0o755)
        block.touch()
        self.addCleanup(lambda: block.unlink(missing_ok=True))
        # The content policy identifies a shell wrapper by its bytes; the
        # build policy, as PyPTO's, refuses a wrapper whose driver differs.
        c = self.client(environ=dict(self.environ, CC=str(wrapper), PYPTO_CACHE_IDENTITY="content"))
        pid = c.ping()
        box: dict = {}

        def work() -> None:
            try:
                box["r"] = c.build(self.request)
            except Exception as e:
                box["e"] = e

        t = threading.Thread(target=work)
        t.start()
        deadline = time.monotonic() + DEADLINE
        while not started.exists():
            self.assertLess(time.monotonic(), deadline, "the compiler never started")
            self.assertTrue(t.is_alive(), box)
            time.sleep(0.01)
        os.kill(pid, signal.SIGKILL)
        block.unlink()
        t.join(DEADLINE)
        self.assertFalse(t.is_alive(), "the build did not finish after the daemon was killed")
        self.assertNotIn("e", box)
        self.assertEqual(box["r"]["status"], "miss", box["r"])
        self.assertNotEqual(c.ping(), pid)
        self.assertEqual(c.build(self.request)["status"], "hit")


class TestProtocol2(DaemonTest):
    def test_full_listen_queue_is_not_answering(self) -> None:
        # A daemon that accepts nothing: a listen queue of none, filled by
        # one connection. The next connect waits only for the bound.
        c = self.client(no_answer=0.2)
        os.makedirs(c.daemon_dir, 0o700)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.bind(c.socket_path)
        s.listen(0)
        queued, box = [], {}

        def attempt() -> None:
            try:
                for _ in range(8):
                    queued.append(c._connect())  # queued until the queue is full
            except Exception as e:
                box["e"] = e

        t = threading.Thread(target=attempt, daemon=True)
        t.start()
        t.join(DEADLINE)
        if t.is_alive():
            s.close()  # wakes the connect: the test fails, not hangs
            self.fail("a connect to a full listen queue still waits")
        for conn in queued:
            conn.sock.close()
        e = box.get("e")
        self.assertIsInstance(e, ptojit.DaemonNotAnswering, box)
        self.assertEqual(e.pid, 0)
        self.assertIn("accepted no connection", str(e))

    def test_stopped_daemon_is_named_and_engine_fallback_builds(self) -> None:
        c = self.client()
        first = c.build(self.request)
        self.assertEqual(first["status"], "miss", first)
        want = {o["name"]: o["digest"] for o in first["outputs"]}
        pid = c.ping()
        os.kill(pid, signal.SIGSTOP)
        self.addCleanup(os.kill, pid, signal.SIGCONT)
        log = os.path.join(c.daemon_dir, "daemon.log")

        quick = self.client(no_answer=0.3)
        start = time.monotonic()
        with self.assertRaises(ptojit.DaemonNotAnswering) as cm:
            quick.build(self.request)
        self.assertLess(time.monotonic() - start, DEADLINE)
        self.assertEqual((cm.exception.pid, cm.exception.log), (pid, log))
        self.assertIn(f"(pid {pid})", str(cm.exception))
        self.assertIn(log, str(cm.exception))
        # stats needs the store: no fallback.
        with self.assertRaises(ptojit.DaemonNotAnswering):
            self.client(no_answer=0.3, fallback="engine").stats()

        for o in first["outputs"]:
            os.unlink(o["path"])
        r = self.client(no_answer=0.3, fallback="engine").build(self.request)
        self.assertEqual(r["status"], "uncached", r)
        self.assertEqual({o["name"]: o["digest"] for o in r["outputs"]}, want)
        for o in r["outputs"]:
            self.assertTrue(os.path.isfile(o["path"]), o)

    def test_bound_from_environment_and_hello_file(self) -> None:
        self.assertEqual(self.client(environ=dict(self.environ, PTOJIT_DAEMON_TIMEOUT="1m30s")).no_answer, 90.0)
        self.assertEqual(self.client(environ=dict(self.environ, PTOJIT_DAEMON_TIMEOUT="bad")).no_answer, 30.0)
        os.makedirs(self.cache, exist_ok=True)
        with open(os.path.join(self.cache, "ptojit.conf"), "w") as f:
            f.write("# settings\ndaemon_timeout = 45s\n")
        # The settings' bound comes from the daemon's hello file, read
        # with the names a request needs; the client reads no settings
        # file.
        c = self.client()
        opened = []
        real_open = open

        def record_open(path, *a, **kw):
            opened.append(os.fspath(path))
            return real_open(path, *a, **kw)

        with mock.patch("builtins.open", record_open):
            c.build(self.request)
        self.assertEqual(c.no_answer, 45.0)
        self.assertNotIn(os.path.join(self.cache, "ptojit.conf"), opened)
        # Changed settings: the stale hello file makes the client ask, the
        # daemon rewrites the file, and the client reads the new bound.
        self.go("config", "set", "daemon_timeout", "50s")
        c.build(self.request)
        self.assertEqual(c.no_answer, 50.0)
        self.assertEqual(self.client(no_answer=2).no_answer, 2)
        with self.assertRaises(ValueError):
            self.client(fallback="other")

    def test_one_connection_for_many_requests(self) -> None:
        c = self.client()
        self.addCleanup(c.close)
        made = []
        real_socket = socket.socket

        def record_socket(*a, **kw):
            s = real_socket(*a, **kw)
            made.append(s)
            return s

        c.build(self.request)  # starts the daemon
        with mock.patch.object(clientmod.socket, "socket", record_socket):
            for _ in range(3):
                self.assertEqual(c.build(self.request)["status"], "hit")
            c.ping()
            c.stats()
        self.assertEqual(made, [], "requests opened connections of their own")

    def test_closed_connection_is_replaced_once(self) -> None:
        c = self.client()
        self.addCleanup(c.close)
        c.build(self.request)
        kept = c._conn
        self.assertIsNotNone(kept)
        # The daemon closed the kept connection (its idle bound): the
        # request goes once more on a new connection, to the same daemon.
        mine, theirs = socket.socketpair()
        theirs.close()
        kept.sock.close()
        kept.sock = mine
        self.assertEqual(c.build(self.request)["status"], "hit")
        self.assertIsNot(c._conn, kept)
        self.assertEqual(c._conn.pid, kept.pid)
        # A daemon that stopped: the kept connection is closed, nobody
        # listens, and a new daemon is started.
        self.stop_daemon()
        self.assertEqual(c.build(self.request)["status"], "hit")
        self.assertNotEqual(c._conn.pid, kept.pid)
        c.close()
        self.assertIsNone(c._conn)

    def test_daemon_of_protocol_1_is_replaced(self) -> None:
        # A fake daemon of an older install: it answers every request in
        # protocol 1 with an error, and stops when asked in protocol 1.
        c = self.client()
        os.makedirs(c.daemon_dir, mode=0o700, exist_ok=True)
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(c.socket_path)
        srv.listen(8)
        srv.settimeout(0.1)  # closing srv does not wake an accept: serve polls stopped
        asked: list = []
        stopped = threading.Event()

        def answer(conn: socket.socket) -> None:
            with conn:
                conn.settimeout(DEADLINE)
                try:
                    n = int.from_bytes(recv_exact(conn, 4), "little")
                    req = json.loads(recv_exact(conn, n))
                except (OSError, EOFError):
                    return  # a client that gave up on this connection
                asked.append((req.get("protocol"), req.get("op")))
                if req.get("protocol") == 1 and req.get("op") == "stop":
                    # Gone before the reply, as a real daemon is gone
                    # before its lock is free: the fake holds no lock.
                    os.unlink(c.socket_path)
                    stopped.set()
                    body = json.dumps({"protocol": 1, "pid": os.getpid(), "exit": 0}).encode()
                    conn.sendall(len(body).to_bytes(4, "little") + body)
                    return
                body = json.dumps({"protocol": 1, "error": f"protocol {req.get('protocol')} not supported (daemon speaks 1)", "exit": 2}).encode()
                conn.sendall(len(body).to_bytes(4, "little") + body)

        def serve() -> None:
            deadline = time.monotonic() + DEADLINE
            while not stopped.is_set() and time.monotonic() < deadline:
                try:
                    conn, _ = srv.accept()
                except socket.timeout:
                    continue
                except OSError:
                    return
                threading.Thread(target=answer, args=(conn,), daemon=True).start()
            srv.close()

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        self.addCleanup(srv.close)
        r = c.build(self.request)
        t.join(DEADLINE)
        self.assertEqual(r["status"], "miss", r)
        self.assertIn((1, "stop"), asked)
        self.assertNotEqual(c.ping(), os.getpid())

    def test_reply_value_or_bytes(self) -> None:
        # A build asks for its output as a JSON value; a daemon that sends
        # it so, and one that predates the field and sends the bytes, give
        # the same response.
        for with_value in (True, False):
            with self.subTest(with_value=with_value):
                c = self.client()
                os.makedirs(c.daemon_dir, mode=0o700, exist_ok=True)
                srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                srv.bind(c.socket_path)
                srv.listen(1)
                srv.settimeout(DEADLINE)
                self.addCleanup(srv.close)
                out = {"status": "hit", "key": "ab" * 32}
                asked: list = []

                def serve() -> None:
                    conn, _ = srv.accept()
                    with conn:
                        conn.settimeout(DEADLINE)
                        while True:
                            try:
                                n = int.from_bytes(recv_exact(conn, 4), "little")
                            except (OSError, EOFError):
                                return
                            req = json.loads(recv_exact(conn, n))
                            asked.append(req)
                            if req.get("op") == "hello":
                                resp = {"protocol": 2, "env_names": [], "pid": os.getpid()}
                            elif with_value and req.get("stdout_json"):
                                resp = {"protocol": 2, "stdout_value": out, "exit": 0}
                            else:
                                resp = {"protocol": 2, "stdout": base64.b64encode(json.dumps(out).encode()).decode(), "exit": 0}
                            body = json.dumps(resp).encode()
                            conn.sendall(len(body).to_bytes(4, "little") + body)

                t = threading.Thread(target=serve, daemon=True)
                t.start()
                r = c.build(self.request)
                c.close()
                t.join(DEADLINE)
                srv.close()
                os.unlink(c.socket_path)
                self.assertEqual(r, out)
                runs = [q for q in asked if q.get("op") == "run"]
                self.assertTrue(runs and runs[0].get("stdout_json") is True, asked)


@unittest.skipUnless(hasattr(os, "getuid") and os.getuid() == 0, "needs root to make files of another user")
class TestHostileDaemon(DaemonTest):
    """A daemon directory, socket or daemon of another user is refused
    before anything is sent, and no daemon is started in its place."""

    NOBODY = 65534

    def refused(self, c: ptojit.Client, words: str) -> None:
        with self.assertRaises(ptojit.DaemonSecurityError) as cm:
            c.build(self.request)
        self.assertIn(words, str(cm.exception))

    def test_directory_of_another_user(self) -> None:
        c = self.client()
        os.makedirs(c.daemon_dir, 0o700)
        os.chown(c.daemon_dir, self.NOBODY, self.NOBODY)
        self.refused(c, f"owned by uid {self.NOBODY}")
        self.assertFalse(os.path.exists(c.socket_path))

    def test_writable_directory(self) -> None:
        c = self.client()
        os.makedirs(c.daemon_dir)
        os.chmod(c.daemon_dir, 0o770)
        self.refused(c, "writable by group or others")

    def test_symlinked_directory(self) -> None:
        c = self.client()
        real = self.tmp / "elsewhere"
        real.mkdir(mode=0o700)
        os.makedirs(os.path.dirname(c.daemon_dir), exist_ok=True)
        os.symlink(real, c.daemon_dir)
        self.refused(c, "symbolic link")

    def test_socket_of_another_user(self) -> None:
        c = self.client()
        os.makedirs(c.daemon_dir, 0o700)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(s.close)
        s.bind(c.socket_path)
        os.chown(c.socket_path, self.NOBODY, self.NOBODY)
        self.refused(c, "socket")

    def test_daemon_of_another_user(self) -> None:
        c = self.client()
        os.makedirs(c.daemon_dir, 0o700)
        fake = (
            "import json, os, socket, struct, sys\n"
            "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
            "s.bind(sys.argv[1])\n"
            f"os.setgid({self.NOBODY}); os.setuid({self.NOBODY})\n"
            "s.listen(1)\n"
            "s.settimeout(60)\n"
            "print('ready', flush=True)\n"
            "conn, _ = s.accept()\n"
            "body = json.dumps({'protocol': 2, 'pid': os.getpid(), 'stdout': '', 'exit': 0}).encode()\n"
            "conn.sendall(struct.pack('<I', len(body)) + body)\n"
            "conn.close()\n"
        )
        p = subprocess.Popen([sys.executable, "-c", fake, c.socket_path], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait, DEADLINE)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "ready")
        self.refused(c, f"runs as uid {self.NOBODY}")


class TestDaemonDir(unittest.TestCase):
    def test_matches_the_go_rules(self) -> None:
        self.assertEqual(clientmod.daemon_dir("/c", {"XDG_RUNTIME_DIR": "/run/user/1"}),
                         "/run/user/1/ptojit/" + __import__("hashlib").sha256(b"/c").hexdigest()[:16])
        self.assertEqual(clientmod.daemon_dir("/c", {"XDG_RUNTIME_DIR": "rel"}), "/c/daemon")
        long = "/" + "x" * 120
        self.assertTrue(clientmod.daemon_dir(long, {}).endswith(__import__("hashlib").sha256(long.encode()).hexdigest()[:16]))
        self.assertIn(f"ptojit-{os.getuid()}", clientmod.daemon_dir(long, {}))
        self.assertEqual(clientmod.default_cache_dir({"PTOJIT_CACHE_DIR": "/a/../b/"}), "/b")
        self.assertEqual(clientmod.default_cache_dir({"XDG_CACHE_HOME": "/x", "HOME": "/h"}), "/x/ptojit")
        self.assertEqual(clientmod.default_cache_dir({"XDG_CACHE_HOME": "x", "HOME": "/h"}), "/h/.cache/ptojit")
        with self.assertRaises(ptojit.DaemonError):
            clientmod.default_cache_dir({"HOME": "h"})


if __name__ == "__main__":
    unittest.main()
