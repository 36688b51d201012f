"""The single error envelope {"error": {code, message, details}} and the app's exception handlers.

Statuses and codes come from error_codes' one table (architecture guide §Errors): library code raises typed
BgixError subclasses; this module writes them out. Must not import service.build_job or pyspark.
"""
from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, TypedDict, cast

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from index_format import errors as fmt
from index_format.predicate.limits import MAX_INTEGER_DIGITS
from service.api.schemas import INVALID_TEXT
from service.api.error_codes import classify
from service.catalog.catalog_errors import InvalidTextError, LocationNotAllowedError, UnknownTableColumnError
from service.query.query_errors import QueryBudgetError

if TYPE_CHECKING:
    from service.observability.metrics import Metrics

log = logging.getLogger("bgix.api")


def _details(exc: BaseException) -> dict[str, object]:
    """Structured fields the client needs to rebuild the same exception class."""
    details: dict[str, object] = {"type": type(exc).__name__}
    if isinstance(exc, QueryBudgetError):
        details["type"] = "QueryTimeoutError"
    elif isinstance(exc, LocationNotAllowedError):
        details["type"] = "PathNotAllowedError"
    elif isinstance(exc, UnknownTableColumnError):
        details["type"] = "UnknownColumnError"
    for attr in ("path", "block", "offset", "reason", "position", "column", "known", "job_id",
                 "table", "index_column", "budget_s", "option", "location", "limit", "family"):
        value = getattr(exc, attr, None)
        if value is not None:
            details[attr] = value
    return cast("dict[str, object]", jsonable_encoder(details))   # a dict encodes to a dict


class ErrorDescription(TypedDict):
    """An error body's fields (schemas.ErrorBody's): what describe() gives."""

    code: str
    message: str
    details: dict[str, object]


def describe(exc: BaseException) -> ErrorDescription:
    """The error body's fields for an exception reported inside a 200 answer (a broken table or index in a
    listing): the same code, message and details a request failing on it would get."""
    return {"code": classify(exc)[1], "message": _encodable(str(exc)), "details": _encodable(_details(exc))}


def envelope(status: int, code: str, message: str, details: object = None) -> JSONResponse:
    """The one error body every failure uses. A message echoing a string that cannot be encoded (a lone
    surrogate a request sent) shows it escaped, so the error itself cannot fail to be written."""
    body = {"error": {"code": code, "message": _encodable(message), "details": _encodable(details or {})}}
    return JSONResponse(status_code=status, content=jsonable_encoder(body))


def _encodable(value: Any) -> Any:
    """`value` with every string that UTF-8 cannot encode (lone surrogates) backslash-escaped."""
    if isinstance(value, str):
        return value if value.isascii() else value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return value


def _invalid_text(errors: list[dict[str, Any]]) -> JSONResponse | None:
    """The 400 of a request holding a string that cannot be encoded (schemas' invalid_text check, or pydantic's
    string_unicode on a constrained string), None when no error is one."""
    for e in errors:
        if e.get("type") == INVALID_TEXT:
            ctx = e.get("ctx") or {}
            exc = InvalidTextError(str(e.get("msg", "")), position=str(ctx.get("where", "")) or None)
        elif e.get("type") == "string_unicode":
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in list(e.get("loc", ()))[1:])
            exc = InvalidTextError(f"{where} is not valid Unicode: a lone surrogate cannot be encoded as UTF-8",
                                   position=where)
        else:
            continue
        return envelope(400, "invalid_text", str(exc), _details(exc))
    return None


def _body_parse_error(cause: BaseException | None) -> str:
    """Why the JSON reader gave up on a body (FastAPI only says 'There was an error parsing the body')."""
    if isinstance(cause, ValueError) and "integer string conversion" in str(cause):
        # Python's json refuses integers over sys.get_int_max_str_digits() (4300) digits to convert.
        digits = re.search(r"value has (\d+) digits", str(cause))
        size = f"of {digits.group(1)} digits" if digits else "too long to convert"
        return (f"request body could not be parsed as JSON: it holds an integer literal {size}; no column type "
                f"holds more than {MAX_INTEGER_DIGITS} digits")
    if isinstance(cause, RecursionError):
        return "request body could not be parsed as JSON: it is nested too deeply"
    return "request body could not be parsed as JSON (nested too deeply or malformed)"


def install_error_handlers(app: FastAPI, metrics: Metrics) -> None:
    """Register the handlers that turn every failure into the envelope."""

    async def on_bgix(request: Request, exc: Exception) -> JSONResponse:
        status, code = classify(exc)
        if isinstance(exc, fmt.IndexFormatError):
            # The service keeps serving; the file and block are named in the message and details.
            metrics.corrupt_files.inc()
            log.error("corrupt index file: %s", exc)
        elif status == 500 and code == "internal":
            log.exception("internal error", exc_info=exc)
            return envelope(500, "internal", "internal server error", {"type": type(exc).__name__})
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        response = envelope(status, code, str(exc), _details(exc))
        if headers:
            response.headers.update(headers)
        return response

    async def on_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        refused = _invalid_text(list(exc.errors()))
        if refused is not None:
            return refused
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()
        ]
        bad_json = [e for e in exc.errors() if e.get("type") == "json_invalid"]
        if bad_json:
            loc = list(bad_json[0].get("loc", ()))
            position = loc[1] if len(loc) > 1 else 0
            reason = (bad_json[0].get("ctx") or {}).get("error") or "JSON decode error"
            return envelope(422, "invalid_request", f"request body is not valid JSON: {reason} at position {position}",
                            {"position": position, "errors": errors})
        return envelope(422, "invalid_request", "request does not match its schema", {"errors": errors})

    async def on_http(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            # FastAPI's answer to a body json.loads could not finish (RecursionError on deep nesting).
            return envelope(422, "invalid_request", _body_parse_error(exc.__cause__))
        code = {404: "not_found", 405: "method_not_allowed", 401: "unauthorized"}.get(
            exc.status_code, "http_error"
        )
        response = envelope(exc.status_code, code, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error", exc_info=exc)
        return envelope(500, "internal", "internal server error")

    app.add_exception_handler(fmt.BgixError, on_bgix)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_exception_handler(Exception, on_unexpected)
