"""The LibCST transformation that migrates one Python file from CUDA to NPU.

One pass applies every rule kind of msFmkTransplt (contract §15; the rules are data in
``data/migration/migration_rules.json``): strings (``ReplaceStringRule``), ``torch.cuda`` as a
module (``ModuleNameModifyRule``, also in import statements), function names
(``FuncNameModifyRule``: ``.cuda()`` -> ``.npu()``), attributes (``ReplaceAttributeRule``:
``is_cuda``, the profiler names), argument rewrites (``--specify-device``) and deletions
(``experimental_config``), and the inserted statements: ``import torch_npu`` after the imports
of a file that uses torch (the ``transfer_to_npu``-free form: the migrated code calls
``torch.npu`` itself), the device selection of ``--specify-device`` and the process-group setup
and DDP wrapping of ``distributed``. LibCST keeps comments and formatting, and every change is
recorded with its lines and the real tool's message texts for ``change_list.csv``.

Rules are written so that migrating migrated code changes nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from npusim.migration.lines import LineProvider
from npusim.migration.names import dotted_name, qualified_name

DEVICE_VARIABLE = "NPU_CALCULATE_DEVICE"
DEVICE_ARGUMENT = f"f'npu:{{{DEVICE_VARIABLE}}}'"
SPECIFY_DEVICE_HEADER = [
    "import os",
    f"{DEVICE_VARIABLE} = 0",
    f"if os.getenv('DEVICE_ID', os.getenv('{DEVICE_VARIABLE}', '')).isdigit():\n"
    f"    {DEVICE_VARIABLE} = int(os.getenv('DEVICE_ID', os.getenv('{DEVICE_VARIABLE}')))",
    f"if torch.npu.current_device() != {DEVICE_VARIABLE}:\n    torch.npu.set_device(f'npu:{{{DEVICE_VARIABLE}}}')",
]
DISTRIBUTED_HEADER = [
    "RANK_SIZE = int(os.getenv('RANK_SIZE', '1'))",
    "RANK_ID = int(os.getenv('RANK_ID', '0'))",
    "torch.distributed.init_process_group('hccl', rank=RANK_ID, world_size=RANK_SIZE)",
]


@dataclass
class Change:
    start: int
    end: int
    operation: str  # INSERT, MODIFY or DELETE
    message: str


@dataclass
class Options:
    specify_device: bool = False
    distributed_entry: bool = False  # this file is the entry of `distributed -m`
    model_variable: str | None = None


@dataclass
class TransformResult:
    module: cst.Module
    changes: list[Change] = field(default_factory=list)


def _quote_stripped(raw: str) -> str:
    body = raw.lstrip("rRbBuUfF")
    return body.replace('"', "").replace("'", "")


def _statement_imports(statement: cst.CSTNode) -> list[str]:
    """The module names a top-level simple statement imports ([] for other statements)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return []
    names = []
    for small in statement.body:
        if isinstance(small, cst.Import):
            names.extend(dotted_name(alias.name) for alias in small.names)
        elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
            names.append(dotted_name(small.module))
    return names


def _is_import_or_docstring(statement: cst.CSTNode) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    first = statement.body[0]
    if isinstance(first, (cst.Import, cst.ImportFrom)):
        return True
    return isinstance(first, cst.Expr) and isinstance(first.value, (cst.SimpleString, cst.ConcatenatedString))


class MigrationTransformer(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (LineProvider,)

    def __init__(self, rules: dict, aliases: dict[str, str], imported_modules: set[str], options: Options):
        super().__init__()
        self.aliases = aliases
        self.imported_modules = imported_modules
        self.options = options
        self.changes: list[Change] = []
        self.string_rules = rules.get("ReplaceStringRule", [])
        self.module_rules = rules.get("ModuleNameModifyRule", [])
        self.function_rules = rules.get("FuncNameModifyRule", [])
        self.attribute_rules = rules.get("ReplaceAttributeRule", [])
        self.delete_rules = rules.get("ArgsDeleteRule", [])
        self.device_rules = rules.get("SpecifyDeviceArgsRule", []) if options.specify_device or options.distributed_entry else []
        self.full_attribute_rules = {rule["old"]: rule["new"] for rule in self.attribute_rules if "." in rule["old"]}
        self.short_attribute_rules = {rule["old"]: rule["new"] for rule in self.attribute_rules if "." not in rule["old"]}

    # -- recording ---------------------------------------------------------------------------

    def _record(self, node: cst.CSTNode, operation: str, message: str) -> None:
        start, end = self.get_metadata(LineProvider, node)
        self.changes.append(Change(start, end, operation, message))

    # -- strings -----------------------------------------------------------------------------

    def _replace_in_string(self, original: cst.CSTNode, value: str, strict_allowed: bool) -> str:
        for rule in self.string_rules:
            old, new, strict = rule["old"], rule["new"], rule.get("strict", True)
            if strict:
                if not strict_allowed or _quote_stripped(value) != old:
                    continue
            elif old not in value:
                continue
            value = value.replace(old, new)
            self._record(original, "MODIFY", f'replace string "{old}" with "{new}"')
        return value

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.BaseExpression:
        value = self._replace_in_string(original_node, original_node.value, strict_allowed=True)
        return updated_node if value == original_node.value else updated_node.with_changes(value=value)

    def leave_FormattedStringText(
        self, original_node: cst.FormattedStringText, updated_node: cst.FormattedStringText
    ) -> cst.FormattedStringText:
        value = self._replace_in_string(original_node, original_node.value, strict_allowed=False)
        return updated_node if value == original_node.value else updated_node.with_changes(value=value)

    # -- imports of torch.cuda ---------------------------------------------------------------

    def _migrated_module_name(self, name: str) -> str | None:
        for rule in self.module_rules:
            parent, old, new = rule["parent_module"], rule["old"], rule["new"]
            prefix = f"{parent}.{old}"
            if name == prefix or name.startswith(prefix + "."):
                return f"{parent}.{new}" + name[len(prefix):]
        return None

    def leave_ImportFrom(self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom) -> cst.ImportFrom:
        if original_node.relative or original_node.module is None:
            return updated_node
        module = dotted_name(original_node.module)
        migrated = self._migrated_module_name(module)
        if migrated is not None:
            self._record(original_node, "MODIFY", "change module cuda to npu")
            return updated_node.with_changes(module=cst.parse_expression(migrated))
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        # `from torch import cuda`: import the npu module under the name the code uses.
        names = list(updated_node.names)
        for index, alias in enumerate(names):
            for rule in self.module_rules:
                if module == rule["parent_module"] and dotted_name(alias.name) == rule["old"]:
                    asname = alias.asname or cst.AsName(name=cst.Name(rule["old"]))
                    names[index] = alias.with_changes(name=cst.Name(rule["new"]), asname=asname)
                    self._record(original_node, "MODIFY", f"change module {rule['old']} to {rule['new']}")
        return updated_node.with_changes(names=names)

    def leave_ImportAlias(self, original_node: cst.ImportAlias, updated_node: cst.ImportAlias) -> cst.ImportAlias:
        migrated = self._migrated_module_name(dotted_name(original_node.name))
        if migrated is None:
            return updated_node
        self._record(original_node, "MODIFY", "change module cuda to npu")
        return updated_node.with_changes(name=cst.parse_expression(migrated))

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False  # the names inside an import are not expressions to migrate

    def visit_ImportAlias(self, node: cst.ImportAlias) -> bool:
        return False  # leave_ImportAlias rewrites the whole dotted name

    # -- attributes and module names ---------------------------------------------------------

    def leave_Attribute(self, original_node: cst.Attribute, updated_node: cst.Attribute) -> cst.BaseExpression:
        name = qualified_name(original_node, self.aliases)
        if name is not None and name in self.full_attribute_rules:
            new = self.full_attribute_rules[name]
            self._record(original_node, "MODIFY", f'replace attribute "{name}" with "{new}"')
            return cst.parse_expression(new)
        attr = original_node.attr.value
        if attr in self.short_attribute_rules:
            new = self.short_attribute_rules[attr]
            self._record(original_node, "MODIFY", f'replace attribute "{attr}" with "{new}"')
            return updated_node.with_changes(attr=cst.Name(new))
        for rule in self.module_rules:
            parent = qualified_name(original_node.value, self.aliases) or dotted_name(original_node.value)
            if attr == rule["old"] and parent == rule["parent_module"]:
                self._record(original_node, "MODIFY", f"change module {rule['old']} to {rule['new']}")
                return updated_node.with_changes(attr=cst.Name(rule["new"]))
        return updated_node

    # -- calls -------------------------------------------------------------------------------

    def _function_rule(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        func = original.func
        name = qualified_name(func, self.aliases)
        short = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        for rule in self.function_rules:
            old, new = rule["old"], rule["new"]
            if "." in old:
                if name != old:
                    continue
            elif short != old or name is not None:
                # A bare name ("cuda") matches method calls on objects, not imported functions.
                continue
            self._record(original, "MODIFY", f"change function {old.rsplit('.', 1)[-1]} to {new}")
            new_func = updated.func
            if isinstance(new_func, cst.Attribute):
                return updated.with_changes(func=new_func.with_changes(attr=cst.Name(new)))
            if isinstance(new_func, cst.Name):
                return updated.with_changes(func=new_func.with_changes(value=new))
        return updated

    def _delete_arguments(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        names = {qualified_name(original.func, self.aliases)}
        for rule in self.delete_rules:
            targets = {rule["func"], rule["func"].replace("torch_npu.profiler", "torch.profiler")}
            if not names & targets:
                continue
            args = list(updated.args)
            for index, arg in enumerate(args):
                if arg.keyword is not None and arg.keyword.value == rule["keyword"]:
                    del args[index]
                    if args and index == len(args):
                        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    self._record(original, "DELETE", f"delete the arg {rule['keyword']} of function {rule['func']}")
                    updated = updated.with_changes(args=args)
                    break
        return updated

    def _device_arguments(self, original: cst.Call, updated: cst.Call) -> cst.Call:
        name = qualified_name(original.func, self.aliases)
        # The short name after the function rules (".cuda(1)" is ".npu(1)" by now).
        short = updated.func.attr.value if isinstance(updated.func, cst.Attribute) else None
        code_of = cst.Module(body=[]).code_for_node
        for rule in self.device_rules:
            target = rule["func"]
            if "." in target:
                if name != target:
                    continue
            elif short != target:
                continue
            args = list(updated.args)
            if "keyword" in rule:
                index = next((i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == rule["keyword"]), -1)
            else:
                index = rule["index"]
                if index >= len(args) or any(a.keyword is not None for a in args[: index + 1]) or args[index].star:
                    continue
            if index < 0 or index >= len(args):
                continue
            text = code_of(args[index].value)
            if rule.get("delete"):
                del args[index]
                if args:
                    args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                self._record(original, "DELETE", f"delete the arg at position {index} of function {target}")
            else:
                if text == DEVICE_ARGUMENT or any(re.search(flag, text, re.IGNORECASE) for flag in rule.get("keep_if", [])):
                    continue
                args[index] = args[index].with_changes(value=cst.parse_expression(DEVICE_ARGUMENT))
                where = f"arg {rule['keyword']}" if "keyword" in rule else f"arg at position {index}"
                self._record(original, "MODIFY", f"change the {where} of function {target} to {DEVICE_ARGUMENT}")
            updated = updated.with_changes(args=args)
        return updated

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        updated_node = self._function_rule(original_node, updated_node)
        if self.delete_rules:
            updated_node = self._delete_arguments(original_node, updated_node)
        if self.device_rules:
            updated_node = self._device_arguments(original_node, updated_node)
        return updated_node

    # -- inserted statements -----------------------------------------------------------------

    def _insert_after_imports(
        self, original: cst.Module, body: list[cst.CSTNode], content: list[str], keyword: str | None
    ) -> list[cst.CSTNode]:
        """``content`` before the first statement after the import block that follows the first
        import of ``keyword`` (any import when None), as the real InsertGlobalRule places it."""
        seen = False
        for index, statement in enumerate(body):
            imports = _statement_imports(statement)
            if imports and (keyword is None or any(n == keyword or n.startswith(keyword + ".") for n in imports)):
                seen = True
                continue
            if not seen or _is_import_or_docstring(statement):
                continue
            return self._insert_at(original, body, index, content)
        if seen:
            return self._insert_at(original, body, len(body), content)
        return body

    def _insert_at(self, original: cst.Module, body: list[cst.CSTNode], index: int, content: list[str]) -> list[cst.CSTNode]:
        statements = [cst.parse_statement(text + "\n", config=original.config_for_parsing) for text in content]
        anchor = original.body[min(index, len(original.body) - 1)] if original.body else None
        if anchor is not None:
            first, last = self.get_metadata(LineProvider, anchor)
            start = first if index < len(original.body) else last + 1
        else:
            start = 1
        length = sum(text.count("\n") + 1 for text in content)
        self.changes.append(Change(start, start + length - 1, "INSERT", str(content)))
        return body[:index] + statements + body[index:]

    def _imports(self, module_name: str) -> bool:
        return any(n == module_name or n.startswith(module_name + ".") for n in self.imported_modules)

    def _assigns(self, body: list[cst.CSTNode], variable: str) -> bool:
        for statement in body:
            if isinstance(statement, cst.SimpleStatementLine):
                for small in statement.body:
                    if isinstance(small, cst.Assign) and any(
                        dotted_name(target.target) == variable for target in small.targets
                    ):
                        return True
        return False

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = list(updated_node.body)
        uses_torch = self._imports("torch")
        changed = bool(self.changes)
        if uses_torch and (changed or self.options.specify_device or self.options.distributed_entry):
            if not self._imports("torch_npu"):
                body = self._insert_after_imports(original_node, body, ["import torch_npu"], "torch")
            if (self.options.specify_device or self.options.distributed_entry) and not self._assigns(body, DEVICE_VARIABLE):
                header = SPECIFY_DEVICE_HEADER
                if self.options.distributed_entry:
                    header = SPECIFY_DEVICE_HEADER[:3] + [DISTRIBUTED_HEADER[0], DISTRIBUTED_HEADER[1]] + [
                        f"{DEVICE_VARIABLE} = RANK_ID if RANK_SIZE > 1 else {DEVICE_VARIABLE}",
                        SPECIFY_DEVICE_HEADER[3],
                        DISTRIBUTED_HEADER[2],
                    ]
                body = self._insert_after_imports(original_node, body, header, "torch")
        if self.options.distributed_entry and self.options.model_variable:
            body = self._wrap_model(original_node, body, self.options.model_variable)
        return updated_node.with_changes(body=body)

    # -- distributed: wrap the model in DDP ----------------------------------------------------

    def _wrap_model(self, original: cst.Module, body: list[cst.CSTNode], variable: str) -> list[cst.CSTNode]:
        wrap = (
            f"{variable} = torch.nn.parallel.DistributedDataParallel({variable}, device_ids=[{DEVICE_VARIABLE}], "
            "broadcast_buffers=False)"
        )
        code = cst.Module(body=[]).code_for_node
        if any(code(s).strip() == wrap for s in _walk_statements(body)):
            return body
        anchor = _find_anchor(list(original.body), variable)
        if anchor is None:
            return body
        new_body = _insert_after_anchor(body, variable, wrap, original.config_for_parsing)
        line = self.get_metadata(LineProvider, anchor)[1] + 1
        self.changes.append(Change(line, line, "INSERT", str([wrap])))
        return new_body


def _walk_statements(body):
    for statement in body:
        yield statement
        inner = getattr(statement, "body", None)
        if isinstance(inner, cst.IndentedBlock):
            yield from _walk_statements(inner.body)


def _moves_or_assigns(statement: cst.CSTNode, variable: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(dotted_name(t.target) == variable for t in small.targets):
            return True
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            func = small.value.func
            if isinstance(func, cst.Attribute) and dotted_name(func.value) == variable and func.attr.value in ("to", "npu", "cuda"):
                return True
    return False


def _run_end(body: list, index: int, variable: str) -> int:
    while index + 1 < len(body) and _moves_or_assigns(body[index + 1], variable):
        index += 1
    return index


def _find_anchor(body: list, variable: str):
    """The last statement of the first run of statements that assign or move ``variable``
    (nested blocks searched in order)."""
    for index, statement in enumerate(body):
        if _moves_or_assigns(statement, variable):
            return body[_run_end(body, index, variable)]
        inner = getattr(statement, "body", None)
        if isinstance(inner, cst.IndentedBlock):
            found = _find_anchor(list(inner.body), variable)
            if found is not None:
                return found
    return None


def _insert_after_anchor(body: list, variable: str, wrap: str, config) -> list:
    for index, statement in enumerate(body):
        if _moves_or_assigns(statement, variable):
            last = _run_end(body, index, variable)
            return body[: last + 1] + [cst.parse_statement(wrap + "\n", config=config)] + body[last + 1:]
        inner = getattr(statement, "body", None)
        if isinstance(inner, cst.IndentedBlock) and _find_anchor(list(inner.body), variable) is not None:
            new_inner = _insert_after_anchor(list(inner.body), variable, wrap, config)
            return body[:index] + [statement.with_changes(body=inner.with_changes(body=new_inner))] + body[index + 1:]
    return body


def transform(
    module: cst.Module, wrapper: cst.MetadataWrapper, rules: dict, aliases, imported_modules, options: Options
) -> TransformResult:
    transformer = MigrationTransformer(rules, aliases, imported_modules, options)
    new_module = wrapper.visit(transformer)
    changes = sorted(transformer.changes, key=lambda c: (c.start, c.end))
    return TransformResult(new_module, changes)
