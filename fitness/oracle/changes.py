"""Which functions a patch changes: those whose code it edits, and those that use, directly or
through other functions, something it edits (a function, a class, a module-level name).

The comparison is of syntax trees without positions or docstrings, so a patch that only moves
or reformats code changes nothing. Uses are found by name across the editable files (a name
read, or an attribute of that name), which over-approximates: a function that names `merge`
counts as using every editable `merge`. A changed module-level statement that binds no name
(an import, a bare call) changes every function of its module.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Mapping

from gi.model.program import parse_quietly

Definitions = dict[str, str]


def _without_docstring(node: ast.AST) -> ast.AST:
    body = getattr(node, "body", None)
    if (
        isinstance(body, list)
        and body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        node = type(node)(**{**{name: getattr(node, name) for name in node._fields}, "body": body[1:] or [ast.Pass()]})
    return node


def _bound_names(statement: ast.stmt) -> list[str]:
    """The module-level names a statement binds (a def, a class, an assignment's targets)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [statement.name]
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    return [node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)]


def _definitions(text: str) -> tuple[Definitions, list[str], dict[str, set[str]], set[str]] | None:
    """Per module-level name, the dump of what binds it; the dumps of the statements that bind
    nothing; per name, the names its definition uses; and the names of top-level functions.
    None when the text does not parse."""
    try:
        module = parse_quietly(text)
    except (SyntaxError, ValueError):
        return None
    body = module.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the module's docstring
    bound: dict[str, list[str]] = {}
    unbound: list[str] = []
    uses: dict[str, set[str]] = {}
    functions: set[str] = set()
    for statement in body:
        names = _bound_names(statement)
        dump = ast.dump(_without_docstring(statement), include_attributes=False)
        if not names:
            unbound.append(dump)
            continue
        used = {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}
        used |= {node.attr for node in ast.walk(statement) if isinstance(node, ast.Attribute)}
        for name in names:
            bound.setdefault(name, []).append(dump)
            uses.setdefault(name, set()).update(used - {name})
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.add(statement.name)
    return {name: "\n".join(dumps) for name, dumps in bound.items()}, unbound, uses, functions


def changed_functions(
    original: Mapping[str, str],
    variant: Mapping[str, str],
    modules: Mapping[str, str],
    meant: Collection[str] = (),
) -> dict[str, str]:
    """The top-level functions of the editable files ("module:name", by `modules`: file ->
    module name) whose behaviour the variant's sources may change, each with why: "edited", or
    the name of what it uses that changed ("uses merge"). The functions `meant` to change (a
    repair's) are left out, and so are the changes that reach others only through them."""
    changed: dict[tuple[str, str], str] = {}
    uses: dict[tuple[str, str], set[str]] = {}
    functions: set[tuple[str, str]] = set()
    for file, module in modules.items():
        before, after = _definitions(original.get(file, "")), _definitions(variant.get(file, original.get(file, "")))
        if before is None:
            continue
        for name, used in before[2].items():
            uses[(module, name)] = set(used)
        functions |= {(module, name) for name in before[3]}
        if after is None or before[1] != after[1]:
            for name in before[0]:
                changed[(module, name)] = "edited" if after is None else "module-level code changed"
            continue
        for name in set(before[0]) | set(after[0]):
            if before[0].get(name) != after[0].get(name):
                changed[(module, name)] = "edited"
        for name, used in after[2].items():
            uses.setdefault((module, name), set()).update(used)
    for key in meant:
        module, _, name = key.partition(":")
        changed.pop((module, name), None)
    grew = True
    while grew:
        grew = False
        names = {name for _, name in changed}
        for definition, used in uses.items():
            if definition in changed or f"{definition[0]}:{definition[1]}" in meant:
                continue
            reached = sorted(used & names)
            if reached:
                changed[definition] = f"uses {reached[0]}"
                grew = True
    return {f"{module}:{name}": why for (module, name), why in sorted(changed.items()) if (module, name) in functions}
