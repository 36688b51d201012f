"""The service's log lines: human text (the default) or, with BGIX_LOG_FORMAT=json, one JSON object per line.

A JSON line holds `timestamp` (ISO 8601 UTC), `level`, `logger`, `message`, and every field a log call passed in
`extra` (the job lines of service.server.job_log: job_id, table, index_column, …), plus `exc_info` for a traceback.
`configure_logging` gives bgix's own loggers a handler and, in json mode, puts the JSON formatter on uvicorn's
handlers, and in uvicorn's default logging configuration (which `bgix serve` starts uvicorn with, after the app
is made) so that uvicorn's very first lines are JSON as well. Standard library logging only; imports nothing
of the service.
"""
from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

FORMATS = ("text", "json")
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# what every LogRecord has: anything else on a record came from a call's `extra`
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_SKIP = frozenset({"color_message"})   # uvicorn's coloured duplicate of the message


class JsonFormatter(logging.Formatter):
    """One JSON object per record: timestamp, level, logger, message, the call's `extra` fields."""

    def __init__(self, *args: Any, use_colors: bool | None = None, **kwargs: Any) -> None:
        super().__init__()   # uvicorn's configuration may pass use_colors, a format string: neither applies

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and key not in _SKIP and key not in out:
                out[key] = value
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            out["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(out, default=str, ensure_ascii=False)


def formatter(fmt: str) -> logging.Formatter:
    return JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT)


class _BgixHandler(logging.StreamHandler[TextIO]):
    """The handler configure_logging puts on the `bgix` logger (one, however often it is called); writes to
    whatever sys.stderr is at the time (a test's capture replaces it)."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def configure_logging(fmt: str, level: int | None = None) -> None:
    """bgix's loggers write to stderr in `fmt` ("text" or "json") at `level` (None: uvicorn's level when it set
    one, else INFO), unless the root logger has handlers; in json mode uvicorn's handlers format as JSON too.
    Idempotent."""
    bgix = logging.getLogger("bgix")
    handler = next((h for h in bgix.handlers if isinstance(h, _BgixHandler)), None)
    # An application that configured the root logger (one embedding the app, a test runner) gets bgix's records
    # there; `bgix serve` configures none, so bgix writes its own lines.
    if handler is None and not logging.getLogger().handlers:
        handler = _BgixHandler()
        bgix.addHandler(handler)
    if handler is not None:
        handler.setFormatter(formatter(fmt))
    if level is None:
        level = logging.getLogger("uvicorn.error").level or logging.INFO
    bgix.setLevel(level)
    if fmt == "json":
        for name in UVICORN_LOGGERS:
            for h in logging.getLogger(name).handlers:
                h.setFormatter(JsonFormatter())
        _json_in_uvicorn_defaults()


def _json_in_uvicorn_defaults() -> None:
    """uvicorn configures its loggers from its module-level LOGGING_CONFIG when it starts (`bgix serve` makes the
    app first): its formatters become JsonFormatter, so no line of this process is text."""
    try:
        from uvicorn.config import LOGGING_CONFIG
    except ImportError:   # not served by uvicorn: nothing to do
        return
    for spec in LOGGING_CONFIG.get("formatters", {}).values():
        spec.clear()
        spec["()"] = f"{__name__}.JsonFormatter"
