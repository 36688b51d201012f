"""The operator table is complete, consistent, and docs/predicates.md shows exactly its generated text."""
from __future__ import annotations

from pathlib import Path

from index_format.predicate.operators import OPERATORS, operator_table_markdown

DOC = Path(__file__).resolve().parents[3] / "docs" / "predicates.md"
CONTRACT_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "between", "not_between", "is_null",
                "is_not_null", "starts_with", "ends_with", "contains", "like",
                "array_contains", "arrays_overlap", "array_contains_all"}


def test_contract_operators_present() -> None:
    assert set(OPERATORS) == CONTRACT_OPS


def test_negations_are_symmetric() -> None:
    for op in OPERATORS.values():
        if op.negation is not None:
            assert OPERATORS[op.negation].negation == op.name
            assert OPERATORS[op.negation].shape == op.shape


def test_budgeted_paths_match_spec_section_6() -> None:
    budgeted = {op.name for op in OPERATORS.values() if op.budgeted}
    assert budgeted == {"lt", "le", "gt", "ge", "between", "not_between", "ends_with", "contains", "like"}


def test_docs_show_the_generated_operator_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    start, end = "<!-- operator-table:start -->\n", "\n<!-- operator-table:end -->"
    shown = text[text.index(start) + len(start):text.index(end)]
    assert shown == operator_table_markdown(), (
        "docs/predicates.md is stale: paste operator_table_markdown() output between the markers"
    )


def test_docs_name_every_operator_and_json_op() -> None:
    text = DOC.read_text(encoding="utf-8")
    for name in [*OPERATORS, "and", "or", "not"]:
        assert f'"{name}"' in text or f"`{name}`" in text, name


def test_array_operators_look_up_elements() -> None:
    # spec §8: array_contains = point lookup of the element, arrays_overlap = IN, array_contains_all = ∩ of lookups
    arrays = {name: op.element_op for name, op in OPERATORS.items() if op.element_op is not None}
    assert arrays == {"array_contains": "eq", "arrays_overlap": "in", "array_contains_all": "in"}
    for name in arrays:
        op = OPERATORS[name]
        assert (op.negation, op.complement, op.budgeted, op.strings_only) == (None, False, False, False)
    assert OPERATORS["array_contains"].shape == "value"
    assert OPERATORS["arrays_overlap"].shape == OPERATORS["array_contains_all"].shape == "values"
