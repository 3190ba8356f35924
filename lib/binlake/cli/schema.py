"""``binlake schema``: the schema history of binlog files as JSON Lines, and
``binlake schema snapshot``: a schema snapshot of a server or a dump (docs/schema.md)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from .common import CliError, UsageError, out

SNAPSHOT_VERB = "snapshot"


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("schema", help="the schema history of binlog files as JSON Lines; "
                       "'schema snapshot': a schema snapshot of a server or a dump",
                       description="Every DDL Query event becomes a versioned table schema "
                       "keyed by its position; every Table_map is checked against the "
                       "version in force. One JSON object per version, then one per "
                       "finding. 'binlake schema snapshot --from-server DSN | --from-file "
                       "DUMP.sql' takes a schema snapshot instead (the options below). See "
                       "docs/schema.md.",
                       usage="binlake schema [--snapshot F] [--no-verify] SOURCE...\n"
                       "       binlake schema snapshot (--from-server DSN | --from-file "
                       "DUMP.sql) [--database DB ...] [--to ARCHIVE_URI] [--out FILE]")
    s.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="binlog files (or directories of them), in order; or the word "
                   "'snapshot' (then no SOURCE)")
    s.add_argument("--snapshot", metavar="F",
                   help="seed snapshot: a schema snapshot (JSON Lines, binlake schema "
                   "snapshot) or mysqldump --no-data output")
    s.add_argument("--no-verify", action="store_true", help="do not verify event checksums")
    g = s.add_argument_group("binlake schema snapshot")
    g.add_argument("--from-server", metavar="DSN",
                   help="read information_schema of this server: HOST[:PORT], "
                   "mysql://USER[:PASSWORD]@HOST[:PORT] or a unix socket path (password: "
                   "$MYSQL_PWD unless in the DSN)")
    g.add_argument("--user", default=None, help="with --from-server (default root)")
    g.add_argument("--from-file", metavar="DUMP.sql",
                   help="mysqldump --no-data output (its position: a CHANGE MASTER TO line, "
                   "from --master-data / --source-data)")
    g.add_argument("--database", action="append", metavar="DB",
                   help="only this database (repeat; default: all but mysql, "
                   "information_schema, performance_schema, sys)")
    g.add_argument("--to", metavar="ARCHIVE_URI",
                   help="store it under <ARCHIVE_URI>/<source>/_schema/ (a directory or "
                   "s3://bucket/prefix, as archive_uri); nothing is written when the newest "
                   "stored snapshot has the same schema")
    g.add_argument("--out", metavar="FILE",
                   help="write it to FILE ('-': stdout; the default without --to)")
    g.add_argument("--config", metavar="F", help="TOML settings file (the source label, "
                   "s3_endpoint_url)")
    g.add_argument("--source-name", metavar="NAME", help="the source server's label")
    s.set_defaults(func=cmd_schema)


_SNAPSHOT_ONLY = ("from_server", "user", "from_file", "database", "to", "out", "config",
                  "source_name")


def cmd_schema(args: argparse.Namespace) -> int:
    if args.sources[0] == SNAPSHOT_VERB:
        return cmd_snapshot(args)
    given = [k for k in _SNAPSHOT_ONLY if getattr(args, k) is not None]
    if given:
        raise UsageError(f"--{given[0].replace('_', '-')} is an option of 'binlake schema "
                         "snapshot'")
    return cmd_history(args)


def cmd_history(args: argparse.Namespace) -> int:
    from ..binlog.render import dumps
    from ..schema.build import build_history, expand_sources, file_seq
    from ..schema.model import SchemaHistory
    from ..schema.seed import from_mysqldump
    from ..schema.snapshot import SnapshotError, apply_snapshot, is_snapshot_text, parse_snapshot

    history = SchemaHistory()
    snap = None
    if args.snapshot:
        try:
            with open(args.snapshot, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise UsageError(f"--snapshot {args.snapshot}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise UsageError(f"--snapshot {args.snapshot}: not UTF-8 text (byte "
                             f"{exc.start})") from None
        if is_snapshot_text(text):
            try:
                snap = parse_snapshot(text, args.snapshot)
            except SnapshotError as exc:
                raise CliError(str(exc)) from None
            files = expand_sources(args.sources)
            if not files or snap.start < (file_seq(files[0], 0), 0):  # before every file
                apply_snapshot(history, snap)
                snap = None
        else:
            from_mysqldump(text, history=history, file=args.snapshot)
    res = build_history(args.sources, history=history, verify_checksums=not args.no_verify,
                        keep_checks=False)
    if snap is not None:
        # at a position inside the files: merged after the build (tables with DDL after it
        # keep the binlog's versions; Table_maps were checked without it)
        apply_snapshot(res.history, snap)
    stdout = out()
    for v in res.history.all_versions():
        stdout.write(dumps({"version": v.to_dict()}))
    for f in res.history.findings:
        stdout.write(dumps(f.to_dict()))
    stdout.flush()
    for err in res.errors:
        print(f"binlake: error: {err}", file=sys.stderr)
    bad = res.checked - res.agreed
    print(f"binlake schema: {len(res.history.versions)} table(s), "
          f"{sum(len(v) for v in res.history.versions.values())} version(s), "
          f"{res.checked} Table_map(s) checked, {bad} disagree(s), "
          f"{len(res.history.findings)} finding(s)", file=sys.stderr)
    return 1 if res.errors else 0


def parse_dsn(dsn: str, user: str | None = None) -> dict[str, Any]:
    """pymysql.connect arguments of ``HOST[:PORT]``, ``mysql://USER[:PASSWORD]@HOST[:PORT]``
    (``mariadb://`` too) or a unix socket path; the password from ``$MYSQL_PWD`` unless the
    DSN has one."""
    from urllib.parse import unquote, urlparse

    params: dict[str, Any] = {"user": user or "root",
                              "password": os.environ.get("MYSQL_PWD", "")}
    if dsn.startswith("/"):
        params["unix_socket"] = dsn
        return params
    if "://" in dsn:
        u = urlparse(dsn)
        if u.scheme not in ("mysql", "mariadb") or not u.hostname:
            raise UsageError(f"--from-server {dsn!r}: expected mysql://USER@HOST[:PORT]")
        try:
            port = u.port or 3306
        except ValueError:
            raise UsageError(f"--from-server {dsn!r}: bad port") from None
        params.update(host=u.hostname, port=port)
        if u.username:
            params["user"] = user or unquote(u.username)
        if u.password is not None:
            params["password"] = unquote(u.password)
        return params
    host, _, port_text = dsn.partition(":")
    if not host or not (port_text or "3306").isdigit():
        raise UsageError(f"--from-server {dsn!r}: expected HOST[:PORT], mysql://USER@HOST"
                         "[:PORT] or a socket path")
    params.update(host=host, port=int(port_text or 3306))
    return params


def connect(params: dict[str, Any]) -> Any:
    try:
        import pymysql
    except ImportError:
        raise CliError("--from-server needs the pymysql package (pip install pymysql)") \
            from None
    try:
        return pymysql.connect(charset="utf8mb4", connect_timeout=10, autocommit=True,
                               **params)
    except pymysql.MySQLError as exc:
        where = params.get("unix_socket") or f"{params.get('host')}:{params.get('port')}"
        raise CliError(f"cannot connect to {where} as {params['user']}: {exc}") from None


def cmd_snapshot(args: argparse.Namespace) -> int:
    from ..archive.objectstore import open_store
    from ..archive.snapshots import store_snapshot
    from ..config import load_settings
    from ..schema.snapshot import SnapshotError, snapshot_from_mysqldump, take_snapshot

    if len(args.sources) > 1:
        raise UsageError(f"binlake schema snapshot takes no SOURCE ({args.sources[1]!r})")
    if args.snapshot or args.no_verify:
        raise UsageError("--snapshot / --no-verify are options of 'binlake schema SOURCE...'")
    if bool(args.from_server) == bool(args.from_file):
        raise UsageError("binlake schema snapshot: give --from-server DSN or --from-file "
                         "DUMP.sql")
    settings = load_settings(args.config, source=args.source_name)  # ConfigError: exit 2
    try:
        if args.from_server:
            conn = connect(parse_dsn(args.from_server, args.user))
            try:
                snap = take_snapshot(conn, args.database)
            finally:
                conn.close()
        else:
            try:
                with open(args.from_file, encoding="utf-8") as fh:
                    text = fh.read()
            except OSError as exc:
                raise UsageError(f"--from-file {args.from_file}: {exc.strerror}") from None
            except UnicodeDecodeError as exc:
                raise UsageError(f"--from-file {args.from_file}: not UTF-8 text (byte "
                                 f"{exc.start})") from None
            snap, findings = snapshot_from_mysqldump(text, args.from_file, args.database)
            for f in findings:
                print(f"binlake: warning: {f}", file=sys.stderr)
        where = str(snap.position) if snap.position else "no binlog position"
        print(f"binlake schema snapshot: {len(snap.versions)} table(s) of "
              f"{len(snap.databases or [])} database(s), valid at {where}"
              + (f" ({snap.server_version})" if snap.server_version else ""), file=sys.stderr)
        if args.out or not args.to:
            data = snap.to_jsonl()
            if args.out in (None, "-"):
                out().write(data)
                out().flush()
            else:
                with open(args.out, "wb") as fh:
                    fh.write(data)
        if args.to:
            store = open_store(args.to, home=settings.home_path,
                               endpoint_url=settings.s3_endpoint_url or None,
                               multipart_bytes=settings.archive_multipart_bytes)
            res = store_snapshot(store, settings.source, snap)
            print(f"binlake schema snapshot: {res.reason}: {res.uri}"
                  + (f" (sha256 {res.sha256})" if res.written else ""), file=sys.stderr)
    except SnapshotError as exc:
        raise CliError(str(exc)) from None
    return 0
