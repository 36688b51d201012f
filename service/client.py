"""Python client of the bgix HTTP API (httpx): register tables, build indexes, query row-id sets.

Imports only httpx, pyroaring, service.api.schemas, the error modules (with service.api.error_codes, the
service's one status table), service.query_answer and index_format.predicate: never fastapi or pyspark (a test
checks sys.modules in a fresh interpreter); pypaimon and pyarrow only inside the Paimon reads (paimon_scan,
read_arrow). Error envelopes are mapped back to the exception classes the library raises, so callers catch
BindError exactly as with local code. No answer loses its exactness: `query()` returns a QueryAnswer (exact,
coverage, plan), and the calls that return plain rows or counts raise InexactAnswerError for an inexact one.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx
from pyroaring import BitMap64

from index_format import errors as fmt
from index_format.predicate.json import to_json as predicate_to_json
from index_format.predicate.tree import Node
from service.api import schemas
from service.api.error_codes import ERROR_TABLE
from service.catalog import catalog_errors as cat
from service.predicate_translation import UntranslatablePredicateError
from service.aggregate_answer import AggregateAnswer, InexactAggregateError, metric_bodies
from service.query_answer import Coverage, InexactAnswerError, QueryAnswer

if TYPE_CHECKING:
    import pyarrow as pa

    from service.paimon_answers import PaimonRowScan

__all__ = ["AggregateAnswer", "ApiError", "Client", "Coverage", "InexactAggregateError", "InexactAnswerError",
           "InvalidRequestError", "JobFailedError", "QueryAnswer", "SnapshotRaceError", "UnauthorizedError", "UntranslatablePredicateError",
           "error_from_response"]

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


class SnapshotRaceError(fmt.BgixError):
    """A roaring answer and its coverage kept coming from different snapshots (commits landing in between)."""


# Classes the server may name in details.type: the library and catalog errors, and every class of the service's
# error table (service.api.error_codes), so e.g. a query's SnapshotChangedError comes back as itself.
_KNOWN: dict[str, type[BaseException]] = {
    **{name: obj for module in (fmt, cat) for name, obj in vars(module).items()
       if isinstance(obj, type) and issubclass(obj, fmt.BgixError)},
    **{cls.__name__: cls for cls, _, _ in ERROR_TABLE if cls.__name__ != "UnauthorizedError"},
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
                 transport: httpx.BaseTransport | None = None,
                 query_options: Mapping[str, Any] | None = None) -> None:
        """`query_options`: members every query request carries besides its own (a service's query options the
        client has no argument for); `transport`: httpx's (tests hand an in-process app's)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(base_url=url.rstrip("/"), headers=headers, timeout=timeout,
                                  transport=transport)
        self._query_options = dict(query_options or {})

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

    def table(self, name: str) -> schemas.TablePublic:
        """The table as the service describes it (a Paimon table: its snapshot, fields, deleted rows, indexes)."""
        return schemas.TablePublic.model_validate(self._request("GET", f"/v1/tables/{name}").json())

    # ---- queries ----------------------------------------------------------------------------
    def query(self, table: str, where: str | None = None,
              predicate: Node | Mapping[str, Any] | None = None, result: str = "roaring",
              limit: int | None = None, cursor: str | None = None,
              explain: bool | str = False, order_by: str | None = None) -> QueryAnswer:
        """The service's answer with its exactness: a QueryAnswer whatever `result` is (`rows`, a BitMap64, for
        "roaring"; this page's `row_ids` / `ranges` / `files` and `next_cursor` otherwise; `count` always).

        `exact` and `coverage` (with the uncovered ranges) are always filled: a roaring answer that is not complete
        asks once more for its coverage (result "ranges", one run), and a roaring answer with `explain` for its
        explain, from a second evaluation at the same snapshots. `explain="plan"`: the plan only (`plan`,
        `coverage`; no rows, no count). Never raises for an inexact answer; `require_exact()` does.
        `order_by="uid DESC"` (or "uid", "uid ASC"): the page's `row_ids` in that column's order, each row's value in
        `order_values` (result "row_ids" is then implied).
        """
        body = {**self._query_options, **_query_body(where, predicate, result, limit, cursor, explain)}
        if order_by is not None:
            column, _, direction = order_by.strip().partition(" ")
            body.update(result="row_ids", order_by={"column": column, "direction": direction.strip().lower() or "asc"})
            result = "row_ids"
        if result == "roaring" and explain != "plan":
            return self._roaring(table, body)
        r = self._request("POST", f"/v1/tables/{table}/query", json=body)
        return _json_answer(table, r.json(), body)

    def aggregate(self, table: str, group_by: Sequence[str] = (), metrics: Sequence[Mapping[str, Any] | str] | None
                  = None, where: str | None = None, predicate: Node | Mapping[str, Any] | None = None, *,
                  order_by: Sequence[tuple[str, str] | str] = (), limit: int | None = None,
                  cursor: str | None = None, explain: bool | str = False, scan: str = "auto",
                  allow_inexact: bool = True) -> AggregateAnswer:
        """Groups of the rows where the predicate is TRUE (every live row without one), by up to three indexed
        columns: POST /v1/tables/{table}/aggregate as an AggregateAnswer (`to_pandas()` for a DataFrame).

        `metrics`: dicts ({"op": "sum", "column": "amount"}) or text ("count", "sum:amount"); default count.
        `order_by`: metric names or group columns, "-name" (or ("name", "desc")) descending. With
        `allow_inexact=False` an answer that leaves rows out raises InexactAggregateError. `explain="plan"`: the
        plan only (`plan`; no group, never exact).
        """
        body: dict[str, Any] = {"group_by": list(group_by), "explain": explain, "scan": scan}
        bodies = metric_bodies(metrics)
        if bodies is not None:
            body["metrics"] = bodies
        if where is not None:
            body["where"] = where
        if predicate is not None:
            body["predicate"] = predicate_to_json(predicate) if isinstance(predicate, Node) else dict(predicate)
        body["order_by"] = [{"by": o[0], "direction": o[1]} if isinstance(o, tuple) else
                            {"by": o[1:], "direction": "desc"} if o.startswith("-") else {"by": o}
                            for o in order_by]
        if limit is not None:
            body["limit"] = limit
        if cursor is not None:
            body["cursor"] = cursor
        r = self._request("POST", f"/v1/tables/{table}/aggregate", json=body)
        answer = AggregateAnswer.from_json(table, r.json())
        return answer if allow_inexact else answer.require_exact()

    def _roaring(self, table: str, body: dict[str, Any], attempts: int = 3) -> QueryAnswer:
        """A roaring answer with its coverage: its headers say whether it is exact and complete, not which rows are
        uncovered nor how it was reached, so those come from a second, one-run `ranges` evaluation of the same
        predicate at the same snapshots (retried when a commit came between the two)."""
        for _ in range(attempts):
            r = self._request("POST", f"/v1/tables/{table}/query", json=body)
            rows = BitMap64.deserialize(r.content)
            exact = r.headers.get(schemas.EXACT_HEADER, "true") == "true"
            complete = r.headers.get(schemas.COVERAGE_COMPLETE_HEADER, "true") == "true"
            shown = r.headers.get(schemas.SNAPSHOTS_HEADER, "")
            count = int(r.headers.get(schemas.COUNT_HEADER, len(rows)))
            answer = QueryAnswer(table=table, result="roaring", exact=exact, coverage=Coverage(complete),
                                 count=count, rows=rows, snapshots=_snapshots_of(shown),
                                 where=body.get("where"), predicate=body.get("predicate"))
            if complete and not body["explain"]:
                return answer
            more = self._request("POST", f"/v1/tables/{table}/query",
                                 json={**body, "result": "ranges", "limit": 1, "cursor": None}).json()
            if _snapshots_text(more.get("snapshots") or {}) != shown:
                continue   # a commit between the two requests: ask both again
            return replace(answer, coverage=Coverage.from_json(more.get("coverage")), explain=more.get("explain"),
                           plan=_plan_of(more))
        raise SnapshotRaceError(f"table {table!r} changed between a query and its coverage {attempts} times; "
                                "try again")

    def rows(self, table: str, where: str | None = None, predicate: Node | Mapping[str, Any] | None = None,
             *, allow_inexact: bool = False) -> BitMap64:
        """Every matching row id as a BitMap64 (one roaring request).

        Raises:
            InexactAnswerError: the answer is not exact, unless `allow_inexact` (then: the answer's rows, a superset
                of the covered matches or nothing, without the uncovered rows).
        """
        answer = self.query(table, where=where, predicate=predicate, result="roaring")
        rows = (answer if allow_inexact else answer.require_exact()).rows
        assert rows is not None
        return rows

    def count(self, table: str, where: str | None = None,
              predicate: Node | Mapping[str, Any] | None = None, *, allow_inexact: bool = False) -> int:
        """The number of matching rows.

        Raises:
            InexactAnswerError: the answer is not exact, unless `allow_inexact` (then: the service's count as it is).
        """
        answer = self.query(table, where=where, predicate=predicate, result="count")
        if not allow_inexact:
            answer.require_exact()
        assert answer.count is not None
        return answer.count

    def row_ids(self, table: str, where: str | None = None,
                predicate: Node | Mapping[str, Any] | None = None, page_size: int = 100_000,
                *, allow_inexact: bool = False) -> list[int]:
        """Every matching row id, fetched page by page with the cursor (each page at the first page's snapshots).

        Raises:
            InexactAnswerError: the answer is not exact, unless `allow_inexact`.
        """
        out: list[int] = []
        cursor = None
        while True:
            answer = self.query(table, where=where, predicate=predicate, result="row_ids",
                                limit=page_size, cursor=cursor)
            if not allow_inexact:
                answer.require_exact()
            out.extend(answer.row_ids or ())
            cursor = answer.next_cursor
            if not cursor:
                return out

    # ---- Paimon's readers -------------------------------------------------------------------
    def paimon_scan(self, table: str, where: str | None = None,
                    predicate: Node | Mapping[str, Any] | None = None, *, columns: Sequence[str] | None = None,
                    catalog_options: Mapping[str, str] | None = None,
                    allow_inexact: bool = False) -> PaimonRowScan:
        """A pypaimon scan of a Paimon table restricted to the answer's rows (`TableScan.with_row_ranges`), pinned
        at the snapshot the service answered from: `.read_builder`, `.scan`, `.splits()`, `.to_arrow()`.

        The scan selects whole rows, so it reads exactly the matching rows when the answer is exact. With
        `allow_inexact` an inexact answer gives the scan of its candidate rows (its rows plus the uncovered
        ranges; every row when the indexes declined): a superset to filter. `catalog_options` go to pypaimon's
        catalog (e.g. S3 credentials); the table is opened by the location the service registered.

        Raises:
            InexactAnswerError: the answer is not exact and `allow_inexact` is False.
            UnsupportedOperationError: not a Paimon table, or one without data evolution (pypaimon restricts
                scans to row ranges only on data-evolution tables; `read_arrow` reads those too).
        """
        from service.paimon_answers import paimon_row_scan

        return paimon_row_scan(self, table, where, predicate, columns=columns, catalog_options=catalog_options,
                               allow_inexact=allow_inexact)

    def read_arrow(self, table: str, where: str | None = None,
                   predicate: Node | Mapping[str, Any] | None = None, columns: Sequence[str] | None = None, *,
                   catalog_options: Mapping[str, str] | None = None) -> pa.Table:
        """Exactly the rows of a Paimon table where the predicate is TRUE, read through pypaimon (deletion vectors
        and data-evolution merges applied), as an Arrow table of `columns` (default: every column; add
        "_ROW_ID" to get the row ids).

        An exact answer is read through `paimon_scan`'s row ranges. An inexact one is never returned as it is:
        its candidate rows are read and filtered with the predicate in pyarrow, with SQL three-valued logic
        (service.arrow_predicate), so the rows are exact either way.

        Raises:
            UntranslatablePredicateError: the answer is inexact and part of the predicate has no pyarrow
                evaluation (named); nothing is returned rather than a superset.
            UnsupportedOperationError: not a Paimon table.
        """
        from service.paimon_answers import read_matching_rows

        return read_matching_rows(self, table, where, predicate, columns=columns, catalog_options=catalog_options)


def _query_body(where: str | None, predicate: Node | Mapping[str, Any] | None, result: str, limit: int | None,
                cursor: str | None, explain: bool | str) -> dict[str, Any]:
    body: dict[str, Any] = {"result": result, "explain": explain}
    if where is not None:
        body["where"] = where
    if predicate is not None:
        body["predicate"] = predicate_to_json(predicate) if isinstance(predicate, Node) else dict(predicate)
    if limit is not None:
        body["limit"] = limit
    if cursor is not None:
        body["cursor"] = cursor
    return body


def _json_answer(table: str, data: Mapping[str, Any], body: Mapping[str, Any]) -> QueryAnswer:
    """A JSON query response (a result or a plan) as a QueryAnswer; a plan is never exact (nothing was read)."""
    plan = data.get("result") == "plan"
    count = data.get("count")
    return QueryAnswer(
        table=table, result=str(data.get("result", body["result"])), exact=bool(data.get("exact", not plan)),
        coverage=Coverage.from_json(data.get("coverage")), count=None if count is None else int(count),
        row_ids=data.get("row_ids"), ranges=data.get("ranges"), files=data.get("files"),
        order_values=data.get("order_values"),
        next_cursor=data.get("next_cursor"), snapshots=dict(data.get("snapshots") or {}),
        explain=data.get("explain"), plan=_plan_of(data), where=body.get("where"), predicate=body.get("predicate"))


def _plan_of(data: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan of a response: a plan response's own, or the one inside `explain`."""
    if isinstance(data.get("plan"), dict):
        return dict(data["plan"])
    explain = data.get("explain")
    plan = explain.get("plan") if isinstance(explain, dict) else None
    return dict(plan) if isinstance(plan, dict) else None


def _snapshots_text(snapshots: Mapping[str, Any]) -> str:
    """Snapshots in the roaring answer's header form (service.api.query_reply), to compare two answers by."""
    return ",".join(f"{c}={s}" for c, s in sorted(snapshots.items()))


def _snapshots_of(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        column, _, snapshot = item.rpartition("=")
        if snapshot.isdigit():
            out[column] = int(snapshot)
    return out


def __getattr__(name: str) -> Any:
    """Re-export the Spark DataFrame helpers lazily (service.spark_filter imports pyspark only when called)."""
    if name in ("spark_filter", "filter_by_row_ids", "select_files"):
        from service import spark_filter as helpers

        return getattr(helpers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
