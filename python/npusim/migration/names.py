"""Resolving the dotted names a file uses to the modules it imported (``import torch as th``,
``from torch.nn import functional as F``), without a full scope analysis: the migration rules
need the qualified name of a callee or attribute, and a file-wide alias table answers that fast
enough for large repositories (local shadowing of an import name is rare in training code)."""

from __future__ import annotations

import libcst as cst


def _dotted(node: cst.CSTNode) -> str:
    """``a.b.c`` for a chain of names and attributes only (``f().x`` and ``x[0].y`` are not
    dotted names); "" otherwise."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return ""
    parts.append(node.value)
    return ".".join(reversed(parts))


class ImportAliases(cst.CSTVisitor):
    """Collects ``local name -> qualified name`` from every import statement of a module."""

    def __init__(self) -> None:
        super().__init__()
        self.aliases: dict[str, str] = {}
        self.imported_modules: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            name = _dotted(alias.name)
            self.imported_modules.add(name)
            if alias.asname is not None:
                self.aliases[_dotted(alias.asname.name)] = name
            else:
                head = name.split(".", 1)[0]
                self.aliases.setdefault(head, head)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if node.relative or node.module is None:
            return False
        module = _dotted(node.module)
        self.imported_modules.add(module)
        if isinstance(node.names, cst.ImportStar):
            return False
        for alias in node.names:
            name = _dotted(alias.name)
            local = _dotted(alias.asname.name) if alias.asname is not None else name
            self.aliases[local] = f"{module}.{name}"
        return False


def _statements(body):
    """Every statement of a body, nested blocks included (expressions are not entered: imports
    are statements, and walking only statements is several times faster than a full visit)."""
    for statement in body:
        yield statement
        for child in (getattr(statement, "body", None), getattr(statement, "orelse", None),
                      getattr(statement, "finalbody", None)):
            if isinstance(child, cst.BaseSuite):
                inner = child.body
                if isinstance(inner, (list, tuple)):
                    yield from _statements(inner)
            elif isinstance(child, (cst.Else, cst.If, cst.Finally)):
                yield from _statements([child])
        for handler in getattr(statement, "handlers", ()) or ():
            yield from _statements([handler])
        for case in getattr(statement, "cases", ()) or ():
            yield from _statements([case])


def collect_aliases(module: cst.Module) -> ImportAliases:
    collector = ImportAliases()
    for statement in _statements(module.body):
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import):
                    collector.visit_Import(small)
                elif isinstance(small, cst.ImportFrom):
                    collector.visit_ImportFrom(small)
    return collector


def qualified_name(node: cst.BaseExpression, aliases: dict[str, str]) -> str | None:
    """``torch.cuda.amp.autocast`` for ``th.cuda.amp.autocast`` after ``import torch as th``;
    None when the head of the dotted name is not an imported name."""
    dotted = _dotted(node)
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    target = aliases.get(head)
    if target is None:
        return None
    return f"{target}.{rest}" if rest else target


def dotted_name(node: cst.BaseExpression) -> str:
    return _dotted(node)
