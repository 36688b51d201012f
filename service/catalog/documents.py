"""Catalog JSON documents: how they are written, read one by one, and parsed into model objects.

A document that does not parse is a CorruptDocumentError naming it, so only what needs it fails.
Imports index_format.storage and service.catalog.catalog_errors/model only.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

from index_format.storage import Storage
from service.catalog.catalog_errors import CorruptDocumentError
from service.catalog.model import DataFile, JobRecord, Table, UnreadableFile

T = TypeVar("T")


def dumps(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, indent=1, sort_keys=True).encode()


def read_json(storage: Storage, path: str) -> dict[str, Any] | None:
    """The parsed JSON object at `path`, None when missing.

    Raises:
        CorruptDocumentError: not UTF-8 JSON, or not a JSON object; names the document.
    """
    try:
        raw = storage.read_bytes(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise corrupt(storage, path, "is a directory") from exc
    try:
        doc = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise corrupt(storage, path, f"is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise corrupt(storage, path, f"is a JSON {type(doc).__name__}, not an object")
    return doc


def read_doc(storage: Storage, path: str, parse: Callable[[dict[str, Any]], T]) -> T | None:
    """`parse` of the document at `path` (None when missing); a document whose fields do not fit
    raises CorruptDocumentError rather than a bare KeyError/TypeError."""
    doc = read_json(storage, path)
    if doc is None:
        return None
    try:
        return parse(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise corrupt(storage, path, f"does not have the expected fields ({type(exc).__name__}: {exc})") from exc


def corrupt(storage: Storage, path: str, what: str) -> CorruptDocumentError:
    try:
        full = storage.resolve(path)
    except Exception:  # naming the document must not fail
        full = path
    return CorruptDocumentError(f"catalog document {full!r} {what}", path=full)


def table_of(doc: dict[str, Any]) -> Table:
    t = Table.from_dict(doc)
    if not isinstance(t.name, str) or not isinstance(t.location, str) or not isinstance(t.format, str):
        raise TypeError("name, location and format must be strings")
    bad = t.bad_text()
    if bad is not None:   # stored by an older version: listing it would fail the whole response
        raise ValueError(f"{bad[0]} is not valid Unicode (lone surrogate at character {bad[1]})")
    return t


def job_of(doc: dict[str, Any]) -> JobRecord:
    job = JobRecord.from_dict(doc)
    if not isinstance(job.id, str) or not isinstance(job.created_at, (int, float)):
        raise TypeError("id must be a string and created_at a number")  # list_jobs sorts by them
    return job


def files_doc_of(doc: dict[str, Any]) -> dict[str, Any]:
    """A row-id map document with its entries parsed (KeyError/TypeError/ValueError when malformed)."""
    return {"next_row_id": int(doc["next_row_id"]),
            "files": [DataFile.from_dict(d) for d in doc["files"]],
            "retired": [DataFile.from_dict(d) for d in doc.get("retired") or []],
            "unreadable": [UnreadableFile.from_dict(d) for d in doc.get("unreadable") or []]}
