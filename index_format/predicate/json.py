"""JSON wire form ↔ unbound predicate tree; ParseError carries a JSON path such as `$.args[1].value`.

The service and the Python client both use this codec. Imports tree/operators only.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json as _json
import math
from collections.abc import Mapping

from index_format.errors import ParseError
from index_format.predicate.limits import DEFAULT_LIMITS, PredicateLimits, ensure_recursion_headroom
from index_format.predicate.operators import OPERATORS
from index_format.predicate.tree import (
    FALSE, TRUE, UNKNOWN, And, BoundLeaf, Leaf, Node, Not, Or, flatten,
)

_CONSTANTS: dict[str, Node] = {"true": TRUE, "false": FALSE, "unknown": UNKNOWN}
_SCALARS = (str, int, float, bool, type(None))


def from_json(obj: object, *, limits: PredicateLimits = DEFAULT_LIMITS) -> Node:
    """Decode the wire form (a dict, or a JSON text of one) into an unbound tree.

    Raises:
        ParseError: malformed input; `position` is the JSON path of the offending member.
        PredicateLimitError: nesting, an IN list or a literal over `limits` (nesting is checked first,
            without recursion).
    """
    if isinstance(obj, (str, bytes)):
        try:
            obj = _json.loads(obj)
        except RecursionError:
            raise limits.depth_error("$") from None
        except ValueError as e:
            raise ParseError(f"invalid JSON: {e}", position="$") from None
    depth = _depth(obj, limits)
    ensure_recursion_headroom(4 * depth)
    node = _Decoder(limits).decode(obj, "$")
    limits.check_tree(node, "$")
    return node


def _op(obj: object) -> str | None:
    op = obj.get("op") if isinstance(obj, Mapping) else None
    return op.lower() if isinstance(op, str) else None


def _depth(root: object, limits: PredicateLimits) -> int:
    """Deepest and/or/not nesting, found without recursion; a chain of NOTs counts as one level."""
    best = 0
    stack: list[tuple[object, str, int, bool]] = [(root, "$", 0, False)]
    while stack:
        obj, path, depth, under_not = stack.pop()
        op = _op(obj)
        if not isinstance(obj, Mapping):   # _op gave None
            pass
        elif op in ("and", "or"):
            args = obj.get("args")
            if isinstance(args, list):
                depth += 1
                stack.extend((a, f"{path}.args[{i}]", depth, False) for i, a in enumerate(args)
                             if isinstance(a, Mapping))
        elif op == "not":
            if not under_not:
                depth += 1
            stack.append((obj.get("arg"), f"{path}.arg", depth, True))
        if depth > limits.max_depth:
            raise limits.depth_error(path)
        best = max(best, depth)
    return best


class _Decoder:
    def __init__(self, limits: PredicateLimits) -> None:
        self.limits = limits

    def decode(self, obj: object, path: str) -> Node:
        if not isinstance(obj, Mapping):
            raise ParseError(f"expected an object with an 'op', got {_kind(obj)}", position=path)
        op = obj.get("op")
        if not isinstance(op, str):
            raise ParseError("missing or non-string 'op'", position=f"{path}.op")
        op = op.lower()
        if op in ("and", "or"):
            _check_keys(obj, path, {"op", "args"})
            args = obj.get("args")
            if not isinstance(args, list):
                raise ParseError(f"'{op}' needs a list 'args'", position=f"{path}.args")
            children = [self.decode(a, f"{path}.args[{i}]") for i, a in enumerate(args)]
            return And(*children) if op == "and" else Or(*children)
        if op == "not":
            # A NOT chain is decoded in a loop (NOT NOT x is x), so its length never costs recursion.
            negations = 0
            while isinstance(obj, Mapping) and _op(obj) == "not":
                _check_keys(obj, path, {"op", "arg"})
                if "arg" not in obj:
                    raise ParseError("'not' needs an 'arg'", position=f"{path}.arg")
                obj, path, negations = obj["arg"], f"{path}.arg", negations + 1
            inner = self.decode(obj, path)
            return Not(inner) if negations % 2 else inner
        if op in _CONSTANTS:
            _check_keys(obj, path, {"op"})
            return _CONSTANTS[op]
        spec = OPERATORS.get(op)
        if spec is None:
            known = ", ".join(["and", "or", "not", *_CONSTANTS, *OPERATORS])
            raise ParseError(f"unknown op {op!r}; expected one of {known}", position=f"{path}.op")
        _check_keys(obj, path, {"op", "column", *spec.fields})
        column = obj.get("column")
        if not isinstance(column, str) or not column:
            raise ParseError("'column' must be a non-empty string", position=f"{path}.column")
        self.limits.check_string(column, f"{path}.column", "column name")
        fields: dict[str, object] = {}
        for name in spec.fields:
            if name not in obj:
                raise ParseError(f"'{op}' needs '{name}' (use null for SQL NULL)", position=f"{path}.{name}")
            raw = obj[name]
            if name == "values":
                if not isinstance(raw, list):
                    raise ParseError("'values' must be a list", position=f"{path}.values")
                self.limits.check_in_count(len(raw), f"{path}.values")
                fields[name] = tuple(self.scalar(v, f"{path}.values[{i}]") for i, v in enumerate(raw))
            else:
                fields[name] = self.scalar(raw, f"{path}.{name}")
        return Leaf(op, column, **fields)  # type: ignore[arg-type]  # fields: checked by the decoder

    def scalar(self, value: object, path: str) -> object:
        if not isinstance(value, _SCALARS):
            raise ParseError(f"expected a literal (string, number, boolean or null), got {_kind(value)}",
                             position=path)
        if isinstance(value, str):
            self.limits.check_string(value, path)
        elif isinstance(value, int) and not isinstance(value, bool):
            self.limits.check_int(value, path)
        elif isinstance(value, float) and not math.isfinite(value):
            # JSON numbers are finite: an infinite one is a literal that overflowed (1e999), or Python's
            # non-standard NaN/Infinity tokens. The wire form spells these as strings (to_json does).
            raise ParseError(f"number {value!r} is not finite (1e999 overflows a double); send \"Infinity\", "
                             "\"-Infinity\" or \"NaN\" as a string", position=path)
        return value


def _check_keys(obj: Mapping[str, object], path: str, allowed: set[str]) -> None:
    for key in obj:
        if key not in allowed:
            raise ParseError(f"unexpected member {key!r} (allowed: {', '.join(sorted(allowed))})",
                             position=f"{path}.{key}")


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def to_json(node: Node) -> dict[str, object]:
    """Encode an unbound (or bound) tree in the wire form; `from_json(to_json(n))` binds to the same tree.

    Literals: dates/timestamps as ISO text, non-finite floats as "NaN"/"Infinity"/"-Infinity",
    decimals as numbers when exact in binary floating point, else as text.
    """
    if node is TRUE:
        return {"op": "true"}
    if node is FALSE:
        return {"op": "false"}
    if node is UNKNOWN:
        return {"op": "unknown"}
    if isinstance(node, Not):
        return {"op": "not", "arg": to_json(node.child)}
    if isinstance(node, (And, Or)):
        kind = And if isinstance(node, And) else Or
        return {"op": "and" if kind is And else "or", "args": [to_json(c) for c in flatten(node, kind)]}
    if isinstance(node, (Leaf, BoundLeaf)):
        if isinstance(node, BoundLeaf) and node.op not in OPERATORS:
            raise ValueError(f"{node!r} has no wire form")
        out: dict[str, object] = {"op": node.op, "column": node.column}
        for name in OPERATORS[node.op].fields:
            raw = getattr(node, name)
            if name == "values":
                values = list(raw or ())
                if isinstance(node, BoundLeaf) and node.null_in_list:
                    values.append(None)
                out[name] = [_literal(v) for v in values]
            else:
                out[name] = _literal(raw)
        return out
    raise TypeError(f"not a predicate node: {node!r}")


def _literal(value: object) -> object:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, decimal.Decimal):
        if value.is_finite() and decimal.Decimal(repr(float(value))) == value:
            return float(value) if value != value.to_integral_value() else int(value)
        return str(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("utf-8")
    raise TypeError(f"literal {value!r} has no JSON form")
