"""Starting private MariaDB servers for tests (shared by conftest and module fixtures)."""

from __future__ import annotations

from pathlib import Path

from binlake_dev.mariadb import MariaDBServer, ServerError, free_port


def start_server(base: Path, template: Path, **kw: object) -> MariaDBServer:
    """Start a server on a free port (a copy of the ``template`` datadir), retrying if
    another process grabs the port first."""
    last: Exception | None = None
    for attempt in range(3):
        srv = MariaDBServer(base / f"s{attempt}", port=free_port(), **kw)  # type: ignore[arg-type]
        srv.init(template=template)
        try:
            return srv.start()
        except ServerError as exc:
            srv.kill()
            last = exc
            if "already in use" not in str(exc):
                raise
    raise ServerError(f"no free port after 3 tries: {last}")
