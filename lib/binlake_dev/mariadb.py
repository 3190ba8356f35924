"""A private, throw-away MariaDB server for tests, the demo and benchmarks.

The server runs from a directory of its own (datadir, socket, pid file, error log and binary
logs all live under ``base_dir``), listens only on 127.0.0.1 and reads no option file
(``--no-defaults``), so nothing on the machine leaks into it and it leaks into nothing::

    with MariaDBServer(tmp_path / "db", port=free_port()) as srv:
        srv.execute(["CREATE DATABASE d", "CREATE TABLE d.t (a INT)", "INSERT INTO d.t VALUES (1)"])
        srv.flush_binary_logs()
        files = srv.closed_binlog_files()

Binary-log defaults are the ones binlake reads best: ROW format, FULL row image, FULL row
metadata, CRC32 checksums, annotated row events, UTC session time zone.  ``options`` overrides
any of them or adds others (``{"binlog-row-image": "MINIMAL"}`` or ``["--log-bin-compress"]``).

pymysql is imported only by :meth:`MariaDBServer.connect` (and what uses it): the module imports
without it, and :meth:`start` waits for the server by reading the protocol greeting from the
unix socket itself.  Nothing happens at import time.

A started server is stopped by :meth:`stop`, by leaving the ``with`` block, at interpreter exit
(``atexit``), and -- on Linux, unless ``die_with_parent=False`` -- by the kernel when the thread
that started it exits (``PR_SET_PDEATHSIG``), so a killed test run leaves no server behind.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MariaDBServer", "ServerError", "free_port"]

BINLOG_BASENAME = "mariadb-bin"
_UNIX_PATH_MAX = 107  # sun_path is 108 bytes including the NUL

# Servers started by this process and not stopped yet; killed at interpreter exit.
_LIVE: weakref.WeakSet[MariaDBServer] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()
_ATEXIT_REGISTERED = False


class ServerError(RuntimeError):
    """The private server could not be initialised, started or stopped."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now (the kernel's choice; never 3308)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((host, 0))
            port = int(s.getsockname()[1])
        if port != 3308:  # reserved for the perf corpus generator
            return port


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something listens on, or holds, ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        if s.connect_ex((host, port)) == 0:
            return True
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.errno in (errno.EADDRINUSE, errno.EACCES)
    return False


def _norm_key(key: str) -> str:
    return key.lstrip("-").replace("_", "-")


def _parse_options(
    options: Mapping[str, str | None] | Iterable[str] | None,
) -> dict[str, str | None]:
    """Options as ``{normalised-name: value or None for a bare flag}``, in the order given.

    Accepts a mapping (``{"binlog_row_image": "MINIMAL", "log-bin-compress": None}``) or a list
    of command-line words (``["--binlog-row-image=MINIMAL", "--log-bin-compress"]``).
    """
    out: dict[str, str | None] = {}
    if options is None:
        return out
    if isinstance(options, Mapping):
        for key, value in options.items():
            out[_norm_key(key)] = None if value is None else str(value)
        return out
    for word in options:
        if not word.startswith("--"):
            raise ValueError(f"server option must look like --name[=value]: {word!r}")
        name, sep, value = word.partition("=")
        out[_norm_key(name)] = value if sep else None
    return out


def _set_pdeathsig() -> None:  # pragma: no cover - runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except Exception:
        pass
    os.setsid()  # own process group: a ^C at the terminal does not reach the server first


def _kill_leftovers() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for srv in servers:
        with contextlib.suppress(Exception):
            srv.stop(timeout=10.0)


class MariaDBServer:
    """A private mariadbd under ``base_dir``.

    Layout: ``base_dir/data`` (datadir), ``base_dir/binlog/mariadb-bin.NNNNNN`` (binary logs and
    ``mariadb-bin.index``), ``base_dir/mariadbd.sock``, ``base_dir/mariadbd.pid``,
    ``base_dir/error.log``.  If ``base_dir`` is so deep that the socket path would not fit in a
    unix socket address, the socket goes into a short private directory under the system temp
    directory instead (removed by :meth:`stop`).
    """

    DEFAULT_OPTIONS: dict[str, str | None] = {
        "server-id": "1",
        "binlog-format": "ROW",
        "binlog-row-image": "FULL",
        "binlog-row-metadata": "FULL",
        "binlog-checksum": "CRC32",
        "binlog-annotate-row-events": "ON",
        "default-time-zone": "+00:00",
        "character-set-server": "utf8mb4",
        "collation-server": "utf8mb4_general_ci",
        # small and quick: a test server holds little data
        "innodb-buffer-pool-size": "32M",
        "innodb-log-file-size": "32M",
        "innodb-flush-log-at-trx-commit": "2",
        "innodb-doublewrite": "0",
        "max-allowed-packet": "64M",
        "skip-name-resolve": None,
        "performance-schema": "OFF",
        "sync-binlog": "0",
        "expire-logs-days": "0",
    }

    def __init__(
        self,
        base_dir: Path | str,
        *,
        port: int,
        server_id: int = 1,
        options: Mapping[str, str | None] | Sequence[str] | None = None,
        startup_timeout: float = 60.0,
        die_with_parent: bool = True,
        mariadbd: str = "mariadbd",
        install_db: str = "mariadb-install-db",
    ) -> None:
        if port == 3308:
            raise ValueError("port 3308 is reserved for the perf corpus generator")
        self.base_dir = Path(base_dir).absolute()
        self.port = int(port)
        self.server_id = int(server_id)
        self.options = _parse_options(options)
        self.startup_timeout = startup_timeout
        self.die_with_parent = die_with_parent
        self.mariadbd = mariadbd
        self.install_db = install_db
        self.datadir = self.base_dir / "data"
        self.binlog_dir = self.base_dir / "binlog"
        self.pid_file = self.base_dir / "mariadbd.pid"
        self.error_log = self.base_dir / "error.log"
        self._socket_dir: Path | None = None
        sock = self.base_dir / "mariadbd.sock"
        self.socket_path = sock
        self._proc: subprocess.Popen[bytes] | None = None

    # -- paths -----------------------------------------------------------------------------

    @property
    def binlog_basename(self) -> Path:
        return self.binlog_dir / BINLOG_BASENAME

    @property
    def binlog_index_path(self) -> Path:
        return self.binlog_dir / f"{BINLOG_BASENAME}.index"

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"MariaDBServer({str(self.base_dir)!r}, port={self.port}, {state})"

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def initialised(self) -> bool:
        return (self.datadir / "mysql").is_dir() and any((self.datadir / "mysql").iterdir())

    def init(self, *, template: Path | str | None = None) -> None:
        """Create the datadir with ``mariadb-install-db`` unless it exists already.

        ``template``: an initialised datadir (of a stopped server) to copy instead of running
        mariadb-install-db -- much quicker when a test session needs many fresh servers.
        """
        if self.initialised:
            return
        self.base_dir.mkdir(parents=True, exist_ok=True)
        if template is not None:
            if self.datadir.exists():
                shutil.rmtree(self.datadir)
            shutil.copytree(template, self.datadir, symlinks=True)
            return
        self.datadir.mkdir(parents=True, exist_ok=True)
        cmd = [
            self.install_db,
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            # no binary log while bootstrapping: binlogs start with the first real start()
        ]
        res = subprocess.run(
            cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300, check=False
        )
        if res.returncode != 0 or not self.initialised:
            raise ServerError(
                f"mariadb-install-db failed (exit {res.returncode}):\n"
                f"{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
            )

    def command(self) -> list[str]:
        """The mariadbd command line :meth:`start` runs."""
        opts: dict[str, str | None] = dict(self.DEFAULT_OPTIONS)
        opts["server-id"] = str(self.server_id)
        opts.update(self.options)
        # These are fixed: the whole point is a private server under base_dir.
        fixed = {
            "user": "root",
            "datadir": str(self.datadir),
            "socket": str(self.socket_path),
            "port": str(self.port),
            "bind-address": "127.0.0.1",
            "pid-file": str(self.pid_file),
            "log-error": str(self.error_log),
        }
        for key in fixed:
            if key in self.options and key != "user":
                raise ValueError(f"option {key!r} is managed by MariaDBServer")
        if "log-bin" not in self.options:
            opts["log-bin"] = str(self.binlog_basename)
        cmd = [self.mariadbd, "--no-defaults"]
        cmd += [f"--{k}={v}" for k, v in fixed.items()]
        for key, value in opts.items():
            cmd.append(f"--{key}" if value is None else f"--{key}={value}")
        return cmd

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> MariaDBServer:
        """Start mariadbd (initialising the datadir first if needed); wait until it answers."""
        if self.running:
            return self
        if port_in_use(self.port):
            raise ServerError(f"port 127.0.0.1:{self.port} is already in use")
        self.init()
        self.binlog_dir.mkdir(parents=True, exist_ok=True)
        if len(str(self.socket_path)) > _UNIX_PATH_MAX:
            self._socket_dir = Path(tempfile.mkdtemp(prefix="bl-sock-"))
            self.socket_path = self._socket_dir / "m.sock"
        for stale in (self.socket_path, self.pid_file):
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
        err_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        preexec = _set_pdeathsig if (self.die_with_parent and sys.platform == "linux") else None
        self._proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=preexec,  # needed for PR_SET_PDEATHSIG
            start_new_session=preexec is None,
        )
        global _ATEXIT_REGISTERED
        with _LIVE_LOCK:
            _LIVE.add(self)
            if not _ATEXIT_REGISTERED:
                atexit.register(_kill_leftovers)
                _ATEXIT_REGISTERED = True
        deadline = time.monotonic() + self.startup_timeout
        while True:
            if self._proc.poll() is not None:
                code = self._proc.returncode
                self._proc = None
                raise ServerError(
                    f"mariadbd exited with code {code} while starting; error log:\n"
                    f"{self.error_log_tail(since=err_offset)}"
                )
            if self._greets():
                return self
            if time.monotonic() > deadline:
                tail = self.error_log_tail(since=err_offset)
                self.kill()
                raise ServerError(
                    f"mariadbd did not answer on {self.socket_path} within "
                    f"{self.startup_timeout:.0f} s; error log:\n{tail}"
                )
            time.sleep(0.05)

    def _greets(self) -> bool:
        """True if the server sends a protocol-10 handshake on its unix socket."""
        if not self.socket_path.exists():
            return False
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(2.0)
                s.connect(str(self.socket_path))
                head = s.recv(5)
        except OSError:
            return False
        # 3-byte length, 1-byte sequence id, then the protocol version (10); 0xff = error packet
        return len(head) == 5 and head[4] == 10

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, wait up to ``timeout`` seconds for a clean shutdown, then SIGKILL."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(timeout=30)
        self._proc = None
        self._cleanup()

    def kill(self) -> None:
        """SIGKILL at once (for failures; binlog tails may be incomplete)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=30)
        self._proc = None
        self._cleanup()

    def _cleanup(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None
            self.socket_path = self.base_dir / "mariadbd.sock"

    def restart(self) -> MariaDBServer:
        self.stop()
        return self.start()

    def __enter__(self) -> MariaDBServer:
        return self.start()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is KeyboardInterrupt:
            self.kill()
        else:
            self.stop(timeout=30.0 if exc_type is None else 10.0)

    def error_log_tail(self, lines: int = 40, *, since: int = 0) -> str:
        try:
            with open(self.error_log, "rb") as fh:
                fh.seek(since)
                data = fh.read()
        except FileNotFoundError:
            return "(no error log)"
        return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])

    # -- SQL ---------------------------------------------------------------------------------

    def connect(self, *, autocommit: bool = True, database: str | None = None, **kw: Any) -> Any:
        """A pymysql connection as root over the unix socket (utf8mb4)."""
        import pymysql  # lazy: the library imports without it

        if not self.running:
            raise ServerError(f"{self!r} is not running")
        params: dict[str, Any] = {
            "unix_socket": str(self.socket_path),
            "user": "root",
            "password": "",
            "charset": "utf8mb4",
            "autocommit": autocommit,
            "max_allowed_packet": 64 * 1024 * 1024,
            "connect_timeout": 10,
        }
        if database is not None:
            params["database"] = database
        params.update(kw)
        return pymysql.connect(**params)

    def execute(
        self,
        sql: str | Iterable[str],
        args: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        database: str | None = None,
        conn: Any = None,
    ) -> list[tuple[Any, ...]]:
        """Run one statement or a list of statements; return the rows of the last one.

        Uses ``conn`` if given (left open), else a fresh autocommit connection (closed after).
        ``args`` apply to a single statement only.
        """
        statements = [sql] if isinstance(sql, str) else list(sql)
        if args is not None and len(statements) != 1:
            raise ValueError("args need exactly one statement")
        own = conn is None
        c = self.connect(database=database) if own else conn
        try:
            rows: list[tuple[Any, ...]] = []
            with c.cursor() as cur:
                for stmt in statements:
                    cur.execute(stmt, args)
                    rows = list(cur.fetchall()) if cur.description else []
            return rows
        finally:
            if own:
                c.close()

    def flush_binary_logs(self) -> Path:
        """Rotate the binary log (from a connection of its own); return the new current file.

        A separate connection matters: FLUSH BINARY LOGS fails with XAER_RMFAIL on a connection
        that holds a prepared XA transaction.
        """
        self.execute("FLUSH BINARY LOGS")
        return self.binlog_files()[-1]

    def binlog_files(self) -> list[Path]:
        """All binary logs listed in the index file, oldest first."""
        try:
            text = self.binlog_index_path.read_text()
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            p = Path(line)
            out.append(p if p.is_absolute() else (self.datadir / p).resolve())
        return out

    def closed_binlog_files(self) -> list[Path]:
        """All binary logs but the one being written (complete files, ending in a Rotate)."""
        return self.binlog_files()[:-1]

    def copy_closed_binlogs(self, dest: Path, since: Path | None = None) -> list[Path]:
        """Copy the closed binary logs (from ``since`` on, when it is listed) into ``dest``,
        emptied first; returns the copied files' sources."""
        files = self.binlog_files()
        closed = files[files.index(since) if since in files else 0:-1]
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for f in closed:
            shutil.copyfile(f, dest / f.name)
        return closed

    def current_binlog_file(self) -> Path | None:
        files = self.binlog_files()
        return files[-1] if files else None

    def binlog_position(self) -> tuple[str, int]:
        """``(file name, position)`` from SHOW MASTER STATUS."""
        rows = self.execute("SHOW MASTER STATUS")
        return str(rows[0][0]), int(rows[0][1])
