"""The decoder: binlog bytes to events.  The lowest floor: imports nothing else of binlake.

Public names (stable): :class:`~binlake.binlog.reader.BinlogReader` (``from
binlake.binlog.reader import BinlogReader``), :class:`~binlake.binlog.event.Event`, the errors of
:mod:`binlake.binlog.errors`, :func:`~binlake.binlog.rowchanges.iter_row_changes` and
:func:`~binlake.binlog.render.event_dict`.  Everything else here is internal.

Modules, bottom up: ``constants`` and ``errors``; ``packed`` (little-endian ints, packed
lengths, bitmaps); ``values`` and ``charsets`` (MySQL column values, character sets);
``json_binary``, ``json_diff`` and ``partial`` (binary JSON, JSON diffs, partial JSON
updates; ``mysql_json`` re-exports the first two); ``fde`` (the
Format_description event: header lengths, checksums); ``columns`` (a table's column model) and
``tablemap`` (the Table_map event); ``rowcodec`` (row readers compiled per table layout);
``context`` (what the event decoders of one file share); ``events/`` (one decoder module per
event family, a type -> decoder registry); ``source`` (local/S3, gzip/zstd bytes); ``reader``
(framing, checksums, the event loop); ``event``, ``render`` and ``rowchanges`` (what readers
get: the event, its JSON form, one row change at a time).
"""
