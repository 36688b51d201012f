"""The service's log lines: human text (the default) or, with BGIX_LOG_FORMAT=json, one JSON object per line.

A JSON line holds `timestamp` (ISO 8601 UTC), `level`, `logger`, `message`, and every field a log call passed in
`extra` (the job lines of service.api.job_log: job_id, table, index_column, …), plus `exc_info` for a traceback.
`configure_logging` gives bgix's own loggers a handler and, in json mode, puts the JSON formatter on uvicorn's
handlers too; `uvicorn_log_config` is the same as a uvicorn `log_config` (so uvicorn's very first lines are JSON
as well). Standard library logging only; imports nothing of the service.
"""
from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

FORMATS = ("text", "json")
UVICORN_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# what every LogRecord has: anything else on a record came from a call's `extra`
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime", "taskName"}
_SKIP = frozenset({"color_message"})   # uvicorn's coloured duplicate of the message


class JsonFormatter(logging.Formatter):
    """One JSON object per record: timestamp, level, logger, message, the call's `extra` fields."""

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


class _BgixHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler configure_logging puts on the `bgix` logger (one, however often it is called); writes to
    whatever sys.stderr is at the time (a test's capture replaces it)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def configure_logging(fmt: str, level: int | None = None) -> None:
    """bgix's loggers write to stderr in `fmt` ("text" or "json") at `level` (None: uvicorn's level when it set
    one, else INFO); in json mode uvicorn's handlers format as JSON too. Idempotent."""
    bgix = logging.getLogger("bgix")
    handler = next((h for h in bgix.handlers if isinstance(h, _BgixHandler)), None)
    if handler is None:
        handler = _BgixHandler()
        bgix.addHandler(handler)
        bgix.propagate = False   # a root handler (basicConfig elsewhere) would print every line twice
    handler.setFormatter(formatter(fmt))
    if level is None:
        level = logging.getLogger("uvicorn.error").level or logging.INFO
    bgix.setLevel(level)
    if fmt == "json":
        for name in UVICORN_LOGGERS:
            for h in logging.getLogger(name).handlers:
                h.setFormatter(JsonFormatter())


def uvicorn_log_config(fmt: str) -> dict[str, Any]:
    """A uvicorn `log_config` whose handlers use `fmt` (uvicorn's own config in text mode)."""
    from uvicorn.config import LOGGING_CONFIG   # uvicorn only where it runs

    config = json.loads(json.dumps(LOGGING_CONFIG))   # a copy: uvicorn's module-level dict stays as it is
    if fmt == "json":
        config["formatters"] = {name: {"()": f"{__name__}.JsonFormatter"} for name in config["formatters"]}
    return config
