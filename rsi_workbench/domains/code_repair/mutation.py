"""The mutation operators of the built-in ``Coder`` and :func:`enumerate_mutations`, which walks a
program once and asks each operator family (expressions, conditions, statements) for its edits.

The order of the result is part of the contract: candidates are drawn from it with a seeded rng and
feed cached experiments, so a change of order changes recorded runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from rsi_workbench.domains.code_repair.mutation_expressions import expression_mutations
from rsi_workbench.domains.code_repair.mutation_sites import Mutation, MutationSites
from rsi_workbench.domains.code_repair.mutation_statements import condition_mutations, statement_mutations

OPERATORS: tuple[str, ...] = (
    "cmp_swap",
    "arith_swap",
    "bool_swap",
    "off_by_one",
    "swap_args",
    "swap_vars",
    "negate_cond",
    "delete_stmt",
    "insert_stmt",
    "call_replace",
    "wrap_call",
    "drop_operand",
    "const_replace",
)
# prior weight of each operator (how often such an edit fixes a human bug); swap_vars and insert_stmt
# have many alternatives per site, so their weight is spread over them.
OPERATOR_PRIOR: dict[str, float] = {
    "cmp_swap": 1.0,
    "arith_swap": 1.0,
    "bool_swap": 0.7,
    "off_by_one": 1.0,
    "swap_args": 0.5,
    "swap_vars": 0.6,
    "negate_cond": 0.6,
    "delete_stmt": 0.5,
    "insert_stmt": 0.4,
    "call_replace": 0.8,
    "wrap_call": 0.3,
    "drop_operand": 0.5,
    "const_replace": 0.4,
}


def enumerate_mutations(program: str, operators: Iterable[str] = OPERATORS) -> list[Mutation]:
    """Every single-edit mutation the operators allow on ``program`` (in source order, deterministic):
    nodes in ``ast.walk`` order, and per node its expression, condition, then statement edits."""
    ops = set(operators)
    unknown = ops - set(OPERATORS)
    if unknown:
        raise ValueError(f"unknown mutation operators {sorted(unknown)}; allowed: {list(OPERATORS)}")
    sites = MutationSites(program, ops)
    for node in ast.walk(sites.tree):
        if id(node) in sites.skip:
            continue
        expression_mutations(sites, node)
        condition_mutations(sites, node)
        statement_mutations(sites, node)
    return sites.out


__all__ = ["OPERATORS", "OPERATOR_PRIOR", "Mutation", "enumerate_mutations"]
