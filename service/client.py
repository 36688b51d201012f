"""Python client of the bgix HTTP API (httpx): register tables, build indexes, query row-id sets.

Imports only httpx, pyroaring, service.api.schemas, the error modules (with service.api.error_codes, the
service's one status table) and index_format.predicate: never
fastapi or pyspark (a test checks sys.modules in a fresh interpreter). Error envelopes are mapped back to
the exception classes the library raises, so callers catch BindError exactly as with local code.
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import httpx
from pyroaring import BitMap64

from index_format import errors as fmt
from index_format.predicate.json import to_json as predicate_to_json
from index_format.predicate.tree import Node
from service.api import schemas
from service.api.error_codes import ERROR_TABLE
from service.catalog import catalog_errors as cat

_TERMINAL = ("succeeded", "failed", "cancelled")


class ApiError(fmt.BgixError):
    """An error response with no more specific library class; carries status, code and details."""

    def __init__(self, message: str, *, status: int, code: str,
                 details: Mapping[str, Any] | None = None) -> None:
        self.status = status
        self.code = code
        self.details = dict(details or {})
        super().__init__(message)


class UnauthorizedError(ApiError):
    """401: missing or wrong token."""


class InvalidRequestError(ApiError):
    """422: the request body or parameters do not match the schema."""


class JobFailedError(fmt.BgixError):
    """`wait()` saw the job end in failed or cancelled."""

    def __init__(self, job: schemas.JobPublic) -> None:
        self.job = job
        super().__init__(f"job {job.id} {job.state}: {job.error or ''}".rstrip(": "))


# Classes the server may name in details.type (library and catalog errors).
_KNOWN: dict[str, type[BaseException]] = {
    name: obj for module in (fmt, cat) for name, obj in vars(module).items()
    if isinstance(obj, type) and issubclass(obj, fmt.BgixError)
}


def _common_base(classes: list[type[BaseException]]) -> type[fmt.BgixError]:
    """The most specific BgixError class every one of `classes` derives from."""
    for base in classes[0].__mro__:
        if isinstance(base, type) and issubclass(base, fmt.BgixError) and all(issubclass(c, base) for c in classes):
            return base
    return fmt.BgixError


def _by_code() -> dict[tuple[int, str], type[fmt.BgixError]]:
    """(status, code) → the class an envelope without a known `details.type` stands for: the common base of the
    classes the service's one table (service.api.error_codes) gives that status and code."""
    groups: dict[tuple[int, str], list[type[BaseException]]] = {}
    for cls, status, code in ERROR_TABLE:
        groups.setdefault((status, code), []).append(cls)
    return {key: _common_base(classes) for key, classes in groups.items()}


_BY_CODE = _by_code()


def error_from_response(response: httpx.Response) -> BaseException:
    """The exception an error envelope stands for (same class as the server-side error when known)."""
    try:
        body = response.json()["error"]
        code, message, details = str(body["code"]), str(body["message"]), dict(body.get("details") or {})
    except (ValueError, KeyError, TypeError):
        return ApiError(response.text[:500] or response.reason_phrase, status=response.status_code,
                        code="http_error")
    if response.status_code == 401:
        return UnauthorizedError(message, status=401, code=code, details=details)
    if response.status_code == 422:
        return InvalidRequestError(message, status=422, code=code, details=details)
    cls = _KNOWN.get(str(details.get("type", ""))) or _BY_CODE.get((response.status_code, code))
    if cls is None:
        return ApiError(message, status=response.status_code, code=code, details=details)
    # Rebuild without calling the class's own __init__ (signatures differ); keep message and fields.
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    for key, value in details.items():
        if key != "type":
            setattr(exc, key, value)
    # the rebuilt library error carries the envelope's status and code too, as ApiError does
    exc.status = response.status_code  # type: ignore[attr-defined]  # an attribute only rebuilt errors have
    exc.code = code  # type: ignore[attr-defined]  # likewise
    return exc


class Client:
    """Synchronous client. `Client(url, token=None)`; use as a context manager or call close()."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout,
                                  transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ---- plumbing ---------------------------------------------------------------------------
    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise error_from_response(response)
        return response

    # ---- tables -----------------------------------------------------------------------------
    def register_table(self, name: str, location: str, *, format: str = "parquet",
                       partition_columns: list[str] | None = None,
                       row_id_column: str | None = None) -> schemas.TablePublic:
        # validated from a dict: a format outside the schema's list is the same 422-style error the server gives
        body = schemas.TableCreate.model_validate({
            "location": location, "format": format, "partition_columns": list(partition_columns or []),
            "row_id_column": row_id_column})
        r = self._request("PUT", f"/v1/tables/{name}", json=body.model_dump())
        return schemas.TablePublic.model_validate(r.json())

    def tables(self) -> list[schemas.TablePublic]:
        return schemas.TablesPublic.model_validate(self._request("GET", "/v1/tables").json()).tables

    def drop_table(self, name: str) -> None:
        self._request("DELETE", f"/v1/tables/{name}")

    def files(self, table: str, *, refresh: bool = False) -> list[schemas.DataFilePublic]:
        """The row-id map: data files with first_row_id and row_count."""
        r = self._request("GET", f"/v1/tables/{table}/files", params={"refresh": refresh})
        return schemas.FilesPublic.model_validate(r.json()).files

    # ---- indexes and jobs -------------------------------------------------------------------
    def create_global_index(self, table: str, index_column: str, index_type: str = "bitmap",
                            partitions: str | list[dict[str, str]] | None = None,
                            options: Mapping[str, Any] | str | None = None) -> str:
        """Start a build; returns the job id."""
        body = {"table": table, "index_column": index_column, "index_type": index_type,
                "partitions": partitions, "options": dict(options) if isinstance(options, Mapping) else options}
        return str(self._request("POST", "/v1/create_global_index", json=body).json()["job_id"])

    def drop_global_index(self, table: str, index_column: str) -> None:
        self._request("POST", "/v1/drop_global_index", json={"table": table, "index_column": index_column})

    def job(self, job_id: str) -> schemas.JobPublic:
        return schemas.JobPublic.model_validate(self._request("GET", f"/v1/jobs/{job_id}").json())

    def cancel(self, job_id: str) -> schemas.JobPublic:
        return schemas.JobPublic.model_validate(self._request("POST", f"/v1/jobs/{job_id}/cancel").json())

    def wait(self, job: str, timeout: float = 600.0, poll: float = 0.2) -> schemas.JobPublic:
        """Poll until the job ends (bounded by `timeout` seconds).

        Raises:
            JobFailedError: the job failed or was cancelled. TimeoutError: still running at the deadline.
        """
        deadline = time.monotonic() + timeout
        while True:
            record = self.job(job)
            if record.state == "succeeded":
                return record
            if record.state in _TERMINAL:
                raise JobFailedError(record)
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job} still {record.state} after {timeout} s")
            time.sleep(poll)

    def indexes(self, table: str) -> list[schemas.IndexPublic]:
        return schemas.IndexesPublic.model_validate(
            self._request("GET", f"/v1/tables/{table}/indexes").json()).indexes

    def values(self, table: str, column: str, prefix: str | None = None, limit: int = 100,
               order: str = "count", cursor: str | None = None) -> schemas.ValuesPublic:
        params: dict[str, Any] = {"limit": limit, "order": order}
        if prefix is not None:
            params["prefix"] = prefix
        if cursor is not None:
            params["cursor"] = cursor
        r = self._request("GET", f"/v1/tables/{table}/indexes/{column}/values", params=params)
        return schemas.ValuesPublic.model_validate(r.json())

    # ---- queries ----------------------------------------------------------------------------
    def query(self, table: str, where: str | None = None,
              predicate: Node | Mapping[str, Any] | None = None, result: str = "roaring",
              limit: int | None = None, cursor: str | None = None,
              explain: bool = False) -> BitMap64 | dict[str, Any]:
        """Rows where the predicate is TRUE: a BitMap64 for result='roaring', else the JSON dict."""
        body: dict[str, Any] = {"result": result, "explain": explain}
        if where is not None:
            body["where"] = where
        if predicate is not None:
            body["predicate"] = predicate_to_json(predicate) if isinstance(predicate, Node) else dict(predicate)
        if limit is not None:
            body["limit"] = limit
        if cursor is not None:
            body["cursor"] = cursor
        r = self._request("POST", f"/v1/tables/{table}/query", json=body)
        if result == "roaring":
            return BitMap64.deserialize(r.content)
        data: dict[str, Any] = r.json()
        return data

    def count(self, table: str, where: str | None = None,
              predicate: Node | Mapping[str, Any] | None = None) -> int:
        data = self.query(table, where=where, predicate=predicate, result="count")
        assert isinstance(data, dict)
        return int(data["count"])

    def row_ids(self, table: str, where: str | None = None,
                predicate: Node | Mapping[str, Any] | None = None, page_size: int = 100_000) -> list[int]:
        """Every matching row id, fetched page by page with the cursor."""
        out: list[int] = []
        cursor = None
        while True:
            data = self.query(table, where=where, predicate=predicate, result="row_ids",
                              limit=page_size, cursor=cursor)
            assert isinstance(data, dict)
            out.extend(data["row_ids"])
            cursor = data.get("next_cursor")
            if not cursor:
                return out


def __getattr__(name: str) -> Any:
    """Re-export the Spark DataFrame helpers lazily (service.spark_filter imports pyspark only when called)."""
    if name in ("spark_filter", "filter_by_row_ids", "select_files"):
        from service import spark_filter as helpers

        return getattr(helpers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
