"""`bgix file build --index-type/--file-index-options`, `bgix file query` and `bgix file inspect` for
Paimon's file-index family (index_format.file_index): one payload or a whole container from a Parquet file,
Paimon's pruning answer to predicates, and a JSON dump of any index file kind.

Imports index_format, pyarrow and this package only (no fastapi, no pyspark).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from index_format.errors import InvalidOptionError, PredicateError

__all__ = ["build_container", "build_payload", "inspect_file", "output_path", "parse_options", "predicates", "query",
           "write_output"]


def parse_options(text: str | None, flag: str) -> dict[str, str]:
    """`k=v;k=v` or `k=v,k=v` → dict (index_format.options.split_pairs: a comma followed by no `key=` stays in
    the value, as in a column list `file-index.bitmap.columns=a,b`)."""
    from index_format.options import split_pairs
    out: dict[str, str] = {}
    for part in split_pairs(text or ""):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(f"{flag}: {part!r} is not key=value")
        out[key.strip()] = value.strip()
    return out


def output_path(output: str) -> str:
    """The absolute path of `-o`; InvalidOptionError when its directory does not exist (a typo must not create
    a tree of directories) or it names a directory."""
    out = os.path.abspath(output)
    parent = os.path.dirname(out)
    if not os.path.isdir(parent):
        raise InvalidOptionError(f"-o {output}: directory {parent} does not exist (create it first)")
    if os.path.isdir(out):
        raise InvalidOptionError(f"-o {output}: is a directory; name the index file to write")
    return out


def write_output(output: str, data: bytes) -> None:
    """Write the `-o` file atomically: never leaves a half-written file behind."""
    from index_format.storage import Storage
    out = output_path(output)
    Storage(os.path.dirname(out)).write_atomic(out, data)


def _read_parquet(path: str, columns: list[str] | None) -> Any:
    from service.cli.parquet_input import ParquetInput
    with ParquetInput(path) as source:
        source.check_columns(columns or ())
        return source.read(source.schema.names if columns is None else columns)


def build_payload(args: argparse.Namespace) -> int:
    """One index payload of one column, rows in file order."""
    from index_format.file_index.formats import write_payload
    from index_format.file_index.values import paimon_spelling, paimon_type
    from index_format.types import from_arrow
    from service.cli.parquet_input import check_key_type

    if not args.column:
        raise InvalidOptionError("--index-type needs --column")
    table = _read_parquet(args.input, [args.column])
    column = table.column(args.column)
    kt = paimon_type(args.key_type) if args.key_type else from_arrow(column.type)
    if args.key_type:
        check_key_type(args.input, args.column, column.type, kt)
    data = write_payload(args.index_type, kt, column, parse_options(args.options, "--options"))
    write_output(args.output, data)
    print(f"wrote {args.output}: {len(data)} bytes, {args.index_type} index of {args.column} "
          f"({paimon_spelling(kt)}, {table.num_rows} rows)")
    return 0


def build_container(args: argparse.Namespace) -> int:
    """The file-index blob Paimon's data-file writer would attach to this file."""
    from index_format.file_index.data_file_index import write_data_file_index
    from index_format.file_index.schema import parse_schema

    options = parse_options(args.file_index_options, "--file-index-options")
    table = _read_parquet(args.input, None)
    schema = parse_schema(args.schema) if args.schema else None
    data = write_data_file_index(table, schema, options)
    if data is None:
        raise InvalidOptionError("--file-index-options configures no index "
                                 "(expected file-index.<type>.columns=...)")
    write_output(args.output, data)
    print(f"wrote {args.output}: {len(data)} bytes, file index of {table.num_rows} rows")
    return 0


def predicates(args: argparse.Namespace) -> list[str]:
    """The SQL predicates of --where and --where-file, in order."""
    texts = list(args.where or [])
    if args.where_file:
        try:
            doc = json.loads(Path(args.where_file).read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidOptionError(f"{args.where_file}: not a JSON list of SQL strings ({exc})") from None
        if not isinstance(doc, list) or not all(isinstance(x, str) for x in doc):
            raise InvalidOptionError(f"{args.where_file}: expected a JSON list of SQL strings")
        texts.extend(doc)
    if not texts:
        raise InvalidOptionError("give at least one predicate with --where or --where-file")
    return texts


def _readers_of(args: argparse.Namespace, data: bytes) -> tuple[Any, dict[str, Any]]:
    """(column → readers, column → KeyType) for a bare payload (column `v`) or a container."""
    from index_format.errors import UnknownColumnError
    from index_format.file_index.file_predicate import readers_by_column
    from index_format.file_index.schema import key_type_of, parse_schema
    from index_format.file_index.values import paimon_type

    path = args.file
    if args.schema:
        from index_format.file_index.container import read_container
        container = read_container(data, path=path)
        schema = parse_schema(args.schema)
        cache: dict[str, Any] = {}
        types: dict[str, Any] = {}
        for col in {c for c, *_ in container.entries} | {n for n, _ in schema}:
            kt = key_type_of(schema, col)
            if kt is not None:
                types[col] = kt

        def readers_of(column: str) -> Any:
            if column not in types:
                raise UnknownColumnError(column, sorted(types))
            if column not in cache:
                cache[column] = container.readers(column, types[column])
            return cache[column]
        return readers_of, types
    if not args.index_type:
        raise InvalidOptionError("say what the file holds: --index-type T --type T for one payload, "
                                 "or --schema 'a:STRING,...' for a file-index container")
    if not args.key_type:
        raise InvalidOptionError("--index-type needs --type (a payload does not record its column type)")
    kt = paimon_type(args.key_type)
    reader = _open_named_payload(args.index_type, data, kt, path)
    return readers_by_column({"v": [reader]}, ["v"]), {"v": kt}


def _open_named_payload(index_type: str, data: bytes, kt: Any, path: str) -> Any:
    """The reader of a bare payload the user says is `index_type`. A payload records neither its type nor its
    length, and some readers accept other types' bytes (a bloom filter reads any bytes; a bsi reader stops
    where its bitmaps end, as Java's does): bytes that are plainly another type's are refused here rather
    than answered (wrongly) as this one."""
    from index_format.errors import BgixError, IndexFormatError
    from index_format.file_index.formats import INDEX_TYPES, open_payload

    def fits(t: str) -> bool:
        try:
            r = open_payload(t, data, kt, path=path)
        except (BgixError, ValueError):
            return False
        return not getattr(r, "trailing_bytes", 0)

    try:
        reader = open_payload(index_type, data, kt, path=path)
    except IndexFormatError as exc:
        # a bloom filter reads almost any bytes: that they read as one is no evidence
        others = [t for t in INDEX_TYPES if t not in (index_type, "bloom-filter") and fits(t)]
        if others:   # the flag is wrong, not the file
            raise InvalidOptionError(f"{exc} (it reads as a {others[0]} payload: --index-type {others[0]}?)") \
                from None
        raise type(exc)(f"{exc.reason} (is the file a {index_type} payload of column type {kt.spelling.upper()}?)",
                        path=exc.path, block=exc.block, offset=exc.offset) from None
    trailing = getattr(reader, "trailing_bytes", 0)
    others = [t for t in INDEX_TYPES if t not in (index_type, "bloom-filter") and fits(t)]
    if trailing or (index_type == "bloom-filter" and others):
        what = (f"it reads as a {others[0]} payload" if others
                else f"{trailing} bytes follow the {index_type} payload's end")
        raise InvalidOptionError(f"{path} is not a {index_type} payload ({what}); --index-type must name the "
                                 "type of payload the file holds")
    return reader


def query(args: argparse.Namespace) -> int:
    from index_format.errors import UnknownColumnError
    from index_format.file_index.file_predicate import check_literals, evaluate, evaluate_top_n
    from index_format.file_index.query_text import parse_query

    texts = predicates(args)
    data = Path(args.file).read_bytes()
    readers_of, types = _readers_of(args, data)
    answers = []
    for i, text in enumerate(texts):
        try:
            node, top = parse_query(text)
            check_literals(node, types)
            result = evaluate(node, readers_of)
            if top is not None:
                if top.column not in types:
                    raise UnknownColumnError(top.column, sorted(types))
                result = evaluate_top_n(top, readers_of, result)
        except PredicateError as exc:  # the request is wrong, not the file: usage error, nothing printed
            print(f"bgix file query: predicate {i + 1} {text!r}: {exc}", file=sys.stderr)
            return 2
        answers.append(result.to_json())
    print(json.dumps(answers, separators=(",", ":")))
    return 0


def inspect_file(args: argparse.Namespace) -> int | None:
    """Print any index file as JSON. None: a global bitmap index with --type (the classic inspect does it)."""
    from index_format.file_index.detect import detect_kind

    data = Path(args.file).read_bytes()
    kind = args.kind or detect_kind(data[:64], data[-64:], len(data), index_type=args.index_type)
    if args.kind is None and args.key_type and not args.index_type and kind in (None, "bucket-hash-index"):
        # `inspect FILE --type T` has always meant a global bitmap index: a damaged one (bad footer magic)
        # must say so, not pass for a bucket hash index
        kind = "global-bitmap-index"
    if kind is None:
        raise InvalidOptionError(f"{args.file}: not a recognisable index file ({len(data)} bytes); "
                                 "name a payload with --index-type, or the kind with --kind")
    if kind == "global-bitmap-index" and args.key_type:
        return None
    if kind == "global-fm-index":   # whatever --index-type guessed: its bytes say what it is
        from service.cli.fm_file_cmd import inspect_fm
        return inspect_fm(args)
    doc: dict[str, Any] = {"file": args.file, "kind": kind, "size": len(data)}
    doc.update(_describe(kind, data, args))
    print(json.dumps(doc, ensure_ascii=False))
    return 0


def _describe(kind: str, data: bytes, args: argparse.Namespace) -> dict[str, Any]:
    path = args.file
    if kind == "file-index-container":
        from index_format.file_index.container import read_container
        from index_format.file_index.schema import key_type_of, parse_schema
        container = read_container(data, path=path)
        out = container.describe()
        if args.schema:
            schema = parse_schema(args.schema)
            payloads: list[dict[str, object]] = []
            for col in dict.fromkeys(c for c, *_ in container.entries):
                kt = key_type_of(schema, col)
                if kt is None:
                    continue
                payloads.extend({"column": col, **r.describe()} for r in container.readers(col, kt))
            out["payloads"] = payloads
        return out
    if kind == "payload":
        from index_format.file_index.formats import open_payload
        from index_format.file_index.values import paimon_type
        if not args.index_type or not args.key_type:
            raise InvalidOptionError("a bare payload needs --index-type and --type")
        return open_payload(args.index_type, data, paimon_type(args.key_type), path=path).describe()
    if kind == "deletion-vector-index":
        from index_format.deletion_vectors.index_file import MAGIC_32, read_deletion_vectors
        vectors = read_deletion_vectors(data, path=path)
        bits = 32 if data[5:9] == MAGIC_32.to_bytes(4, "big") else 64
        return {"bits": bits, "vectors": [{"cardinality": len(v), "positions": list(v)} for v in vectors]}
    if kind == "bucket-hash-index":
        from index_format.bucket_index.hash_index import read_hash_index
        hashes = read_hash_index(data, path=path)
        return {"count": int(len(hashes)), "hashes": [int(h) for h in hashes]}
    # a global bitmap index without --type: its keys cannot be decoded, its layout can
    from index_format.global_index.footer import parse_footer
    from index_format.layout import FOOTER_SIZE
    footer = parse_footer(data[-FOOTER_SIZE:], len(data), path=path)
    return {"footer": footer.to_dict(), "note": "pass --type to decode the keys and row ids"}
