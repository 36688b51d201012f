"""What the service answered to one aggregate, as the Python client hands it back: the groups (keys and metrics) with
whether they are exact and which rows no index covers, and a pandas DataFrame of them when pandas is importable.

Imports service.query_answer (Coverage, the exactness words) only; pandas inside `to_pandas`.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from index_format.errors import BgixError
from service.query_answer import Coverage

if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]  # no pandas-stubs in the venv; only the return type

__all__ = ["AggregateAnswer", "Group", "InexactAggregateError"]


@dataclass(frozen=True, slots=True)
class Group:
    """One group: its key (group column → value, None the NULL group) and its metrics (name → value)."""

    key: dict[str, Any]
    metrics: dict[str, Any]

    def __getitem__(self, name: str) -> Any:
        """A metric's value, else a group column's."""
        return self.metrics[name] if name in self.metrics else self.key[name]


@dataclass(frozen=True)
class AggregateAnswer:
    """One aggregate's answer (one page of groups, `next_cursor` for the next) with its exactness: `exact` and
    `coverage` are the service's own words, never dropped. Iterating yields the groups whatever their exactness;
    `require_exact()` raises InexactAggregateError for an answer that leaves rows out."""

    table: str
    group_by: list[str]
    metric_names: list[str]
    groups: list[Group]
    total_groups: int
    rows: int
    exact: bool
    coverage: Coverage
    snapshots: dict[str, int] = field(default_factory=dict)
    next_cursor: str | None = None
    explain: dict[str, Any] | None = None
    plan: dict[str, Any] | None = None      # with explain="plan": the plan alone (no group; never exact)

    @classmethod
    def from_json(cls, table: str, data: Mapping[str, Any]) -> AggregateAnswer:
        return cls(table=table, group_by=list(data.get("group_by") or []),
                   metric_names=list(data.get("metrics") or []),
                   groups=[Group(dict(g.get("key") or {}), dict(g.get("metrics") or {}))
                           for g in data.get("groups") or []],
                   total_groups=int(data.get("total_groups", 0)), rows=int(data.get("rows", 0)),
                   exact=bool(data.get("exact", False)), coverage=Coverage.from_json(data.get("coverage")),
                   snapshots=dict(data.get("snapshots") or {}), next_cursor=data.get("next_cursor"),
                   explain=data.get("explain"), plan=data.get("plan") if data.get("result") == "plan" else None)

    @property
    def is_exact(self) -> bool:
        return self.exact and self.coverage.complete

    def require_exact(self) -> AggregateAnswer:
        """This answer if it is exact. Raises InexactAggregateError otherwise."""
        if not self.is_exact:
            raise InexactAggregateError(self)
        return self

    def __iter__(self) -> Iterator[Group]:
        return iter(self.groups)

    def __len__(self) -> int:
        return len(self.groups)

    def records(self) -> list[dict[str, Any]]:
        """One flat dict per group: the group columns, then the metrics."""
        return [{**g.key, **g.metrics} for g in self.groups]

    def to_pandas(self) -> pd.DataFrame:
        """The groups as a DataFrame: one column per group column and per metric, a row per group (this page).
        Raises ImportError when pandas is not installed."""
        import pandas as pd

        return pd.DataFrame.from_records(self.records(), columns=[*self.group_by, *self.metric_names])


class InexactAggregateError(BgixError):
    """An aggregate answer that leaves rows out (`exact: false` or `coverage.complete: false`) where an exact one was
    asked for (`Client.aggregate(..., allow_inexact=False)`). Client-side only; `answer` holds what the service said."""

    def __init__(self, answer: AggregateAnswer) -> None:
        self.answer = answer
        missing = answer.coverage.uncovered_rows
        why = f"{missing:,} rows no index covers were not grouped" if missing else "the filter is not exact"
        super().__init__(f"the aggregate on table {answer.table!r} is not exact: {why}")


def metric_bodies(metrics: Sequence[Mapping[str, Any] | str] | None) -> list[dict[str, Any]] | None:
    """Metrics as the request takes them: dicts as given; text as "count" or "<op>:<column>" (e.g. "sum:amount")."""
    if metrics is None:
        return None
    out: list[dict[str, Any]] = []
    for m in metrics:
        if isinstance(m, str):
            op, _, column = m.partition(":")
            out.append({"op": op, **({"column": column} if column else {})})
        else:
            out.append(dict(m))
    return out
