"""Which names are bound where, from libcst's scope analysis, and which expressions can move.

Expression operators replace a name by another, or copy an expression of the program to
another place; either must keep every name it reads bound there. LibCST's `ScopeProvider`
says which scope a node is in and what each scope assigns; a name counts as bound at a
node when it is a parameter of its function or its scope assigns it on an earlier line, or
an enclosing function or module scope assigns it anywhere (it is bound by the time the
function runs). Worked out once per file.
"""

from __future__ import annotations

import builtins
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import libcst as cst
import libcst.metadata as meta

from gi.model.edits import node_at
from gi.model.program import Program
from gi.model.sites import Location

#: Names of builtins a copied expression may read (unless the program rebinds them).
BUILTINS = frozenset(dir(builtins))
#: Expressions that open scopes or change what the function is: never copied elsewhere.
_UNMOVABLE = (
    cst.Lambda,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Yield,
    cst.Await,
    cst.NamedExpr,
)


@dataclass
class FileScopes:
    """The scope analysis of one file: each node's scope and position, and which names are reads."""

    scopes: Mapping[cst.CSTNode, meta.Scope | None]
    positions: Mapping[cst.CSTNode, meta.CodeRange]
    reads: frozenset[cst.CSTNode]
    parents: Mapping[cst.CSTNode, cst.CSTNode] = field(default_factory=dict)
    free: dict[Location, frozenset[str] | None] = field(default_factory=dict)
    bound: dict[Location, dict[str, cst.CSTNode]] = field(default_factory=dict)
    unbound: dict[Location, frozenset[str]] = field(default_factory=dict)
    #: walrus_reads_outside's answers: condition_drop asks them of every `and`/`or` operand of
    #: the program at each proposal.
    walrus: dict[Location, bool] = field(default_factory=dict)


_ANALYSES: weakref.WeakKeyDictionary[Program, dict[str, FileScopes]] = weakref.WeakKeyDictionary()


def file_scopes(program: Program, file: str) -> FileScopes:
    """The scope analysis of `file` (computed once per program)."""
    per_file = _ANALYSES.setdefault(program, {})
    analysis = per_file.get(file)
    if analysis is None:
        wrapper = meta.MetadataWrapper(program.modules[file], unsafe_skip_copy=True)
        scopes = wrapper.resolve(meta.ScopeProvider)
        positions = wrapper.resolve(meta.PositionProvider)
        parents = wrapper.resolve(meta.ParentNodeProvider)
        reads = frozenset(
            access.node for scope in {s for s in scopes.values() if s is not None} for access in scope.accesses
        )
        analysis = per_file[file] = FileScopes(scopes, positions, reads, parents)
    return analysis


def _bound_before(analysis: FileScopes, binder: cst.CSTNode, here: meta.CodeRange) -> bool:
    """Is a binding in force at `here`? A parameter always is; a binding by a simple statement
    (`x = ...`, `import x`) once that statement has ended, so neither `c = a + X` nor a call
    spread over lines (`cause = f(\n limit=limit)`) counts its own target as bound inside it;
    another binding (a `for` target, `with ... as`, `def`) when it stands on an earlier line."""
    if isinstance(binder, cst.Param):
        return True
    bound_at = analysis.positions[binder]
    node: cst.CSTNode | None = binder
    while node is not None and not isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        node = analysis.parents.get(node)
    if isinstance(node, cst.BaseSmallStatement):
        end = analysis.positions[node].end
        return (end.line, end.column) <= (here.start.line, here.start.column)
    return bound_at.start.line < here.start.line


def bound_names(program: Program, location: Location) -> dict[str, cst.CSTNode]:
    """The program's own names bound where the node at `location` is evaluated, each with the
    node that binds it (a parameter, a target name, a `def`, `class` or import); builtins aside."""
    analysis = file_scopes(program, location.file)
    found = analysis.bound.get(location)
    if found is not None:
        return found
    node = program.node(location)
    own = analysis.scopes.get(node)
    here = analysis.positions[node]
    found = {}
    # Every name the own function assigns is its local, bound or not yet bound here.
    local = (
        {a.name for a in own.assignments if isinstance(a, meta.Assignment)}
        if isinstance(own, meta.FunctionScope)
        else set()
    )
    scope = own
    while scope is not None and not isinstance(scope, meta.BuiltinScope):
        skipped = isinstance(scope, meta.ClassScope) and scope is not own
        # Code outside functions runs top to bottom: only what is bound above it counts.
        ordered = scope is own or not isinstance(own, meta.FunctionScope)
        for assignment in () if skipped else scope.assignments:
            if not isinstance(assignment, meta.Assignment) or assignment.name in found:
                continue
            if scope is not own and assignment.name in local:
                continue
            position = analysis.positions.get(assignment.node)
            if position is not None and (not ordered or _bound_before(analysis, assignment.node, here)):
                found[assignment.name] = assignment.node
        scope = scope.parent
    analysis.bound[location] = found
    analysis.unbound[location] = frozenset(local - set(found))
    return found


def unbound_locals(program: Program, location: Location) -> frozenset[str]:
    """The locals of the function the node at `location` is in that are not yet bound there:
    names it assigns only later (reading one raises UnboundLocalError, even when a builtin or
    an outer scope has that name)."""
    bound_names(program, location)
    return file_scopes(program, location.file).unbound[location]


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def free_names(program: Program, location: Location) -> frozenset[str] | None:
    """The names the expression at `location` reads, or None when it cannot be copied
    elsewhere (it holds a lambda, a comprehension, `yield`, `await` or `:=`)."""
    analysis = file_scopes(program, location.file)
    if location in analysis.free:
        return analysis.free[location]
    names: set[str] = set()
    result: frozenset[str] | None = None
    for node in _walk(program.node(location)):
        if isinstance(node, _UNMOVABLE):
            break
        if isinstance(node, cst.Name) and node in analysis.reads:
            names.add(node.value)
    else:
        result = frozenset(names)
    analysis.free[location] = result
    return result


def movable(program: Program, ingredient: Location, target: Location) -> bool:
    """May a copy of the expression at `ingredient` stand at `target`: does every name it
    reads have a binding there (the program's, or a builtin's)?"""
    names = free_names(program, ingredient)
    return names is not None and all_bound(program, names, target)


def all_bound(program: Program, names: frozenset[str], target: Location) -> bool:
    """Does every one of `names` have a binding where `target` is (the program's, or a builtin's
    that no local of the target's function shadows)?"""
    bound = bound_names(program, target)
    unbound = unbound_locals(program, target)
    return all(name in bound or (name in BUILTINS and name not in unbound) for name in names)


def walrus_reads_outside(program: Program, location: Location) -> bool:
    """Does the expression at `location` bind a name with `:=` that is read outside it?
    (Dropping or replacing it would leave that read without its binding.)"""
    analysis = file_scopes(program, location.file)
    if location not in analysis.walrus:
        analysis.walrus[location] = _walrus_reads_outside(analysis, node_at(program, location))
    return analysis.walrus[location]


def _walrus_reads_outside(analysis: FileScopes, expression: cst.CSTNode) -> bool:
    inside = set(_walk(expression))
    for node in inside:
        if not isinstance(node, cst.NamedExpr) or not isinstance(node.target, cst.Name):
            continue
        binding = _binding(analysis.scopes.get(node.target), node.target)
        if binding is None or any(reference.node not in inside for reference in binding.references):
            return True
    return False


def _binding(scope: meta.Scope | None, target: cst.Name) -> meta.Assignment | None:
    """The assignment `target` makes, looked up from its scope outwards (a `:=` in a
    comprehension binds in the enclosing function)."""
    while scope is not None:
        for assignment in scope.assignments[target.value]:
            if isinstance(assignment, meta.Assignment) and assignment.node is target:
                return assignment
        scope = None if isinstance(scope, meta.BuiltinScope) else scope.parent
    return None
