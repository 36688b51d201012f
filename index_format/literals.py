"""Literals per key type: coercion of SQL/JSON literals to canonical key values, their JSON form, and the SQL
LIKE matcher (the predicate binder and the fm reader share it).

Imports index_format.{keys,types,errors} only; never the reader or writer.
"""
from __future__ import annotations

import datetime as dt
import decimal
import math
import re
from dataclasses import dataclass

import numpy as np

from index_format.errors import BindError
from index_format.keys import (
    EPOCH, EPOCH_DATE, EPOCH_UTC, INT_BOUNDS, INT_STRUCTS, MILLIS_PER_DAY, UTC, time_of_millis,
)
from index_format.types import KeyType


def _bind(kt: KeyType, value: object, why: str) -> BindError:
    return BindError(f"literal {show(value)} does not fit column type {kt.spelling}: {why}")


def show(value: object, limit: int = 80) -> str:
    """repr() for messages, shortened; never raises (repr of an int over 4300 digits does)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<integer of about {int(value.bit_length() * 0.30103) + 1} digits>"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a message must not fail
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 5] + "…" + text[-4:]


# Integers, decimals and exponents beyond this cannot fit any column type; checking first keeps
# int(Decimal('1E+999999999')) from building a billion-digit number.
_MAX_ADJUSTED_EXPONENT = 40


_TRUE = {"true", "t", "1", "yes", "y"}
_FALSE = {"false", "f", "0", "no", "n"}
_FLOAT_WORDS = {"nan": math.nan, "+nan": math.nan, "-nan": math.nan, "infinity": math.inf,
                "+infinity": math.inf, "inf": math.inf, "+inf": math.inf,
                "-infinity": -math.inf, "-inf": -math.inf}


def coerce_literal(kt: KeyType, value: object) -> object:
    """Turn a JSON/SQL literal into the canonical value of `kt`; BindError if it cannot fit."""
    if value is None:
        return None
    name = kt.name
    if name == "string":
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as e:
                raise _bind(kt, value, f"not valid Unicode (lone surrogate at character {e.start})") from None
            return value
        if isinstance(value, bytes):
            try:
                return value.decode("utf-8")
            except UnicodeDecodeError:
                raise _bind(kt, value, "not UTF-8") from None
        raise _bind(kt, value, "expected a string")
    if name == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise _bind(kt, value, "expected true or false")
    if name in INT_STRUCTS:
        return _coerce_int(kt, value)
    if name in ("float", "double"):
        return _coerce_float(kt, value)
    if name == "decimal":
        return _coerce_decimal(kt, value)
    if name == "date":
        return _coerce_date(kt, value)
    if name == "time":
        return _coerce_time(kt, value)
    return _coerce_timestamp(kt, value)


def _coerce_int(kt: KeyType, value: object) -> int:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not an integer")
    if isinstance(value, (int, np.integer)):
        out = int(value)
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or value != int(value):
            raise _bind(kt, value, "not an integral number")
        out = int(value)
    elif isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise _bind(kt, value, "not an integral number")
        if value and value.adjusted() > _MAX_ADJUSTED_EXPONENT:
            raise _bind(kt, value, "out of range")
        if value != value.to_integral_value():
            raise _bind(kt, value, "not an integral number")
        out = int(value)
    elif isinstance(value, str):
        try:
            out = int(value.strip())
        except ValueError:
            try:
                d = decimal.Decimal(value.strip())
            except decimal.InvalidOperation:
                raise _bind(kt, value, "not a number") from None
            return _coerce_int(kt, d)
    else:
        raise _bind(kt, value, "expected an integer")
    lo, hi = INT_BOUNDS[kt.name]
    if not lo <= out <= hi:
        raise _bind(kt, value, f"outside [{lo}, {hi}]")
    return out


def _coerce_float(kt: KeyType, value: object) -> float:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not a number")
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _FLOAT_WORDS:
            out = _FLOAT_WORDS[word]
        else:
            try:
                out = float(word)
            except ValueError:
                raise _bind(kt, value, "not a number") from None
            _check_finite(kt, value, out)
    elif isinstance(value, (int, float, decimal.Decimal, np.integer, np.floating)):
        try:
            out = float(value)
        except (OverflowError, ValueError):  # an int beyond the double range; Decimal('sNaN')
            raise _bind(kt, value, f"not a finite {kt.spelling}") from None
        if not isinstance(value, (float, np.floating)):
            _check_finite(kt, value, out)
    else:
        raise _bind(kt, value, "expected a number")
    if out != out:
        return math.nan
    if kt.name == "float" and math.isfinite(out):
        f32 = float(np.float32(out)) if abs(out) <= 3.4028234663852886e38 else math.inf
        if not math.isfinite(f32):
            raise _bind(kt, value, "outside the FLOAT range")
        out = f32
    return out


def _check_finite(kt: KeyType, value: object, out: float) -> None:
    """A number written in digits that overflows to ±infinity (`1e999`) is a typo, not infinity: say so.

    Infinity and NaN are spelled as words ('Infinity', '-inf', 'NaN'), or passed as floats by a program.
    """
    if math.isinf(out):
        raise _bind(kt, value, f"not a finite {kt.spelling} (it overflows); write 'Infinity' or '-Infinity' for infinity")


def _coerce_decimal(kt: KeyType, value: object) -> decimal.Decimal:
    if isinstance(value, bool):
        raise _bind(kt, value, "boolean is not a number")
    try:
        if isinstance(value, float):
            if not math.isfinite(value):
                raise _bind(kt, value, "not finite")
            d = decimal.Decimal(repr(value))
        elif isinstance(value, (int, decimal.Decimal, np.integer)):
            d = decimal.Decimal(int(value)) if isinstance(value, np.integer) else decimal.Decimal(value)
        elif isinstance(value, str):
            d = decimal.Decimal(value.strip())
        else:
            raise _bind(kt, value, "expected a decimal number")
    except decimal.InvalidOperation:
        raise _bind(kt, value, "not a number") from None
    if not d.is_finite():
        raise _bind(kt, value, "not finite")
    if d and d.adjusted() > _MAX_ADJUSTED_EXPONENT:
        raise _bind(kt, value, f"more than {kt.decimal_precision} digits")
    scale = kt.decimal_scale
    q = decimal.Decimal(1).scaleb(-scale)
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        quantized = d.quantize(q)
        if quantized != d:
            raise _bind(kt, value, f"more than {scale} fractional digits")
        unscaled = int(quantized.scaleb(scale))
    if abs(unscaled) >= 10 ** kt.decimal_precision:
        raise _bind(kt, value, f"more than {kt.decimal_precision} digits")
    return quantized


@dataclass(frozen=True, slots=True)
class Neighbours:
    """The values of a numeric key type nearest a number it cannot hold: `below`, the greatest value under it,
    and `above`, the least value over it (canonical values; None: the type has no value on that side)."""

    below: int | decimal.Decimal | None
    above: int | decimal.Decimal | None


def neighbours(kt: KeyType, value: object) -> Neighbours | None:
    """For a number an integer or DECIMAL type cannot hold — a fraction, more fractional digits than the scale,
    or beyond the type's range (`2.5` or `40000` for SMALLINT, `1.255` for DECIMAL(p,2)) — the type's values
    nearest it: a comparison with it is one with them (SQL compares the numbers, `i > 2.5` is `i >= 3`).

    None when `value` is not a finite number (a string, a boolean, NaN, infinity: a literal of another kind),
    when `kt` holds it as it is, or when `kt` is not an integer or DECIMAL type.
    """
    if kt.name not in INT_STRUCTS and kt.name != "decimal":
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, decimal.Decimal, np.integer,
                                                                      np.floating)):
        return None
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            return None
        d = decimal.Decimal(repr(float(value)))   # the number as written, as _coerce_decimal reads it
    elif isinstance(value, (int, np.integer)):
        n = int(value)
        # beyond every type (a DECIMAL holds at most 38 digits): no digits of it are needed, nor safe to make
        d = decimal.Decimal(n) if n.bit_length() <= 256 else decimal.Decimal(1 if n > 0 else -1).scaleb(100)
    else:
        d = value
        if not d.is_finite():
            return None
    with decimal.localcontext() as ctx:
        ctx.prec = 100   # exact for every bound and step below (38 digits at most)
        return _neighbours(kt, d)


def _neighbours(kt: KeyType, d: decimal.Decimal) -> Neighbours | None:
    if kt.name == "decimal":
        scale = kt.decimal_scale
        step = decimal.Decimal(1).scaleb(-scale)
        top = (decimal.Decimal(10) ** kt.decimal_precision - 1).scaleb(-scale)
        lowest, highest = -top, top
    else:
        step = decimal.Decimal(1)
        lo, hi = INT_BOUNDS[kt.name]
        lowest, highest = decimal.Decimal(lo), decimal.Decimal(hi)

    def canonical(x: decimal.Decimal) -> int | decimal.Decimal:
        if kt.name != "decimal":
            return int(x)
        return x.quantize(step).copy_abs() if x == 0 else x.quantize(step)   # no -0.00

    # Compared before any rounding: `1E+999999999` needs no billion-digit number.
    if d > highest:
        return Neighbours(canonical(highest), None)
    if d < lowest:
        return Neighbours(None, canonical(lowest))
    floor = d.quantize(step, rounding=decimal.ROUND_FLOOR)
    ceiling = d.quantize(step, rounding=decimal.ROUND_CEILING)
    if floor == ceiling:
        return None   # the type holds it
    return Neighbours(canonical(floor), canonical(ceiling))


def _coerce_date(kt: KeyType, value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        if value.time() != dt.time(0) or value.tzinfo is not None:
            raise _bind(kt, value, "has a time of day")
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            raise _bind(kt, value, "expected YYYY-MM-DD") from None
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return EPOCH_DATE + dt.timedelta(days=value)
        except OverflowError:
            raise _bind(kt, value, "out of range") from None
    raise _bind(kt, value, "expected a date")


def _coerce_time(kt: KeyType, value: object) -> dt.time:
    if isinstance(value, dt.time):
        out = value
    elif isinstance(value, str):
        try:
            out = dt.time.fromisoformat(value.strip())
        except ValueError:
            raise _bind(kt, value, "expected HH:MM:SS[.fff]") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < MILLIS_PER_DAY:
            raise _bind(kt, value, "milliseconds of day out of range")
        return time_of_millis(value)
    else:
        raise _bind(kt, value, "expected a time")
    if out.tzinfo is not None:
        raise _bind(kt, value, "time zones are not allowed")
    if out.microsecond % 1000:
        raise _bind(kt, value, "TIME keys hold milliseconds")
    return out


def _coerce_timestamp(kt: KeyType, value: object) -> object:
    ltz = kt.name == "timestamp_ltz"
    if isinstance(value, int) and not isinstance(value, bool):
        # epoch nanoseconds (contract: accepted for every precision, canonical only for p > 6)
        if value % 1000 == 0:
            base = EPOCH_UTC if ltz else EPOCH
            try:
                value = base + dt.timedelta(microseconds=value // 1000)
            except OverflowError:
                raise _bind(kt, value, "out of range") from None
        else:
            if kt.time_precision <= 6:
                raise _bind(kt, value, f"sub-microsecond value for {kt.spelling}")
            return value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise _bind(kt, value, "expected an ISO timestamp") from None
    elif isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if not isinstance(value, dt.datetime):
        raise _bind(kt, value, "expected a timestamp")
    if ltz:
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
    elif value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


# ---------------------------------------------------------------- JSON form

def to_json(kt: KeyType, value: object) -> object:
    """JSON-able form of a canonical value (NaN/±Infinity as strings; ISO dates; decimal strings)."""
    if value is None:
        return None
    name = kt.name
    if name in ("float", "double"):
        v = float(value)  # type: ignore[arg-type]  # a float key's canonical value
        if v != v:
            return "NaN"
        if v == math.inf:
            return "Infinity"
        if v == -math.inf:
            return "-Infinity"
        return v
    if name == "decimal":
        return str(value)
    if name in ("date", "time"):
        return value.isoformat()  # type: ignore[attr-defined]  # a date or time
    if name in ("timestamp", "timestamp_ltz"):
        if isinstance(value, int):
            secs, nanos = divmod(value, 1_000_000_000)
            base = (EPOCH_UTC if name == "timestamp_ltz" else EPOCH) + dt.timedelta(seconds=secs)
            text = base.replace(microsecond=0).isoformat()
            tz = ""
            if name == "timestamp_ltz":
                text, tz = text[:-6], text[-6:]
            return f"{text}.{nanos:09d}{tz}"
        return value.isoformat()  # type: ignore[attr-defined]  # a datetime
    return value


def like_regex(pattern: str) -> str:
    """SQL LIKE → an anchored regex source: `%` any run, `_` one character, `\\` escapes the next one.

    Raises ValueError for a pattern ending in a lone backslash.
    """
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise ValueError(f"LIKE pattern {pattern!r} ends with an escape character")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return "(?s:" + "".join(out) + r")\Z"
