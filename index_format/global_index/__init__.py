"""The bitmap global index file format (spec §2–§4): footer, dictionary blocks, per-file metadata, reader, writer.

Builds on the shared pieces of index_format (layout, codecs, keys, bitmaps, storage); imports no predicate code.
"""
