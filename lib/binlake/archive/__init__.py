"""Closed binlogs to the object store: :mod:`.archiver` (which files are closed, copying each
exactly once, gaps) over :mod:`.objectstore` (a local directory or S3: never overwritten, never
visible half-written, sha256 recorded).  Imports the decoder and the transaction layer only."""

from .archiver import (
    ArchiveError,
    ArchiveGapError,
    ArchiveReport,
    ArchiveVerifyError,
    BinlogSource,
    LocalBinlogSource,
    RemoteBinlogSource,
    SourceFile,
    archive,
    fde_in_use,
    source_from_settings,
)

__all__ = ["ArchiveError", "ArchiveGapError", "ArchiveReport", "ArchiveVerifyError", "BinlogSource",
           "LocalBinlogSource", "RemoteBinlogSource", "SourceFile", "archive", "fde_in_use",
           "source_from_settings"]
