"""What a Python file uses, judged against the support data: unsupported APIs and constructs
that need a manual port (each with its line and a reason), unknown ``torch`` APIs, precision and
performance advice (from the advice data and the placement table), affinity APIs, and the custom
CUDA operators it builds (``CUDAExtension``, ``load_inline``, ``load``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from npusim.migration import support_data
from npusim.migration.lines import LineProvider
from npusim.migration.names import qualified_name

# Names judged by the torch_npu side of the data, never "unknown" to PyTorch.
_NPU_NAMESPACES = ("torch.npu", "torch_npu")

UNKNOWN_TIP = "not found in PyTorch {torch} nor in the torch_npu {line} support data: check it by hand"
NO_NPU_COUNTERPART_TIP = (
    "torch.npu.{name} is not in the public torch.npu API of torch_npu {line}: check that the migrated name exists, "
    "or remove it / use an NPU alternative"
)
# torch.cuda names that the migration renames to an existing torch.npu name.
_RENAMED_CUDA_NAMES = {"CUDAGraph"}
NCCL_COMPARISON_TIP = (
    'compares a backend name with "nccl": under transfer_to_npu the backend is "hccl" and the comparison is '
    'false; the offline migration rewrites the literal to "hccl", check that the branch is still the intended one'
)


@dataclass
class ApiRow:
    start: int
    end: int
    op: str
    tips: str


@dataclass
class AffinityRow:
    start: int
    end: int
    api_type: str
    call_name: str
    affinity_name: str


@dataclass
class FileUsage:
    unsupported: list[ApiRow] = field(default_factory=list)
    unknown: list[ApiRow] = field(default_factory=list)
    precision: list[ApiRow] = field(default_factory=list)
    performance: list[ApiRow] = field(default_factory=list)
    affinity: list[AffinityRow] = field(default_factory=list)
    cuda_ops: list[str] = field(default_factory=list)
    torch_apis: list[tuple[int, str]] = field(default_factory=list)  # (line, qualified name) of calls


def _placement_tip(advice: support_data.OperatorAdvice) -> str:
    operators = ", ".join(advice.operators[:6]) + (", ..." if len(advice.operators) > 6 else "")
    if advice.placement == "cpu_fallback":
        return (
            f"falls back to the CPU on torch_npu (no NPU kernel for {operators}): the tensors are copied to the host "
            "and back and the host waits; replace it or move it out of the step"
        )
    when = "" if advice.condition == "-" else f" when {advice.condition.replace('=', ' is ')}"
    sync = " and makes the host wait for the device" if advice.sync else ""
    return f"runs on the AI CPU{when} ({operators}), much slower than the AI Core{sync}"


def _string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


class ApiUsageVisitor(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (LineProvider,)

    def __init__(self, aliases: dict[str, str], data: support_data.SupportData):
        super().__init__()
        self.aliases = aliases
        self.data = data
        self.usage = FileUsage()
        self._reported: set[tuple[int, int, str, str]] = set()
        import torch

        self._torch_version = torch.__version__.split("+")[0]

    # -- helpers -----------------------------------------------------------------------------

    def _lines(self, node: cst.CSTNode) -> tuple[int, int]:
        return self.get_metadata(LineProvider, node)

    def _add(self, rows: list[ApiRow], kind: str, node: cst.CSTNode, op: str, tips: str) -> None:
        start, end = self._lines(node)
        key = (start, end, op, kind)
        if key in self._reported:
            return
        self._reported.add(key)
        rows.append(ApiRow(start, end, op, tips))

    def _judge_name(self, node: cst.CSTNode, name: str, called: bool) -> None:
        data = self.data
        if name in data.unsupported:
            self._add(self.usage.unsupported, "unsupported", node, name, data.unsupported[name])
        elif name.startswith("torch.cuda."):
            first = name.split(".")[2]
            if first not in data.npu_names and first not in _RENAMED_CUDA_NAMES and support_data.api_exists(name):
                tip = NO_NPU_COUNTERPART_TIP.format(line=data.release_line, name=first)
                self._add(self.usage.unsupported, "unsupported", node, f"torch.cuda.{first}", tip)
        if name in data.precision:
            self._add(self.usage.precision, "precision", node, name, data.precision[name])
        if name in data.performance:
            self._add(self.usage.performance, "performance", node, name, data.performance[name])
        if name in data.affinity_calls and called:
            api_type, affinity = data.affinity_calls[name]
            start, end = self._lines(node)
            self.usage.affinity.append(AffinityRow(start, end, api_type, name, affinity))
        if not name.startswith("torch.") or name.startswith(_NPU_NAMESPACES):
            return
        if not support_data.api_exists(name) and name not in data.unsupported:
            tip = UNKNOWN_TIP.format(torch=self._torch_version, line=data.release_line)
            self._add(self.usage.unknown, "unknown", node, name, tip)
            return
        if called:
            self.usage.torch_apis.append((self._lines(node)[0], name))
            self._placement_advice(node, name, qualified=True)

    def _placement_advice(self, node: cst.CSTNode, name: str, qualified: bool) -> None:
        parts = name.split(".")
        operators: list[str] = []
        if name in self.data.module_operators:
            operators = self.data.module_operators[name]
        elif len(parts) == 2 or (len(parts) == 4 and parts[1:3] == ["nn", "functional"]) or (
            len(parts) == 3 and parts[1] in ("Tensor", "special", "linalg", "fft")
        ):
            prefix = {"special": "special_", "linalg": "linalg_", "fft": "fft_"}.get(parts[1], "") if len(parts) == 3 else ""
            operators = [prefix + parts[-1]]
        for operator in operators:
            advice = support_data.operator_advice(self.data.release_line, operator)
            if advice is None or (not qualified and advice.condition != "-"):
                continue
            self._add(self.usage.performance, "performance", node, name, _placement_tip(advice))

    # -- visits ------------------------------------------------------------------------------

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        name = qualified_name(node, self.aliases)
        if name is None:
            return True
        self._judge_name(node, name, called=False)
        return False  # a pure chain of names: nothing inside to visit

    def visit_Name(self, node: cst.Name) -> bool:
        name = self.aliases.get(node.value)
        if name is not None and "." in name:
            self._judge_name(node, name, called=False)
        return False

    def visit_Call(self, node: cst.Call) -> bool:
        name = qualified_name(node.func, self.aliases)
        if name is not None:
            self._judge_name(node.func, name, called=True)
            self._custom_operator(node, name)
        elif isinstance(node.func, cst.Attribute):
            method = f"torch.Tensor.{node.func.attr.value}"
            for table, rows, kind in (
                (self.data.unsupported, self.usage.unsupported, "unsupported"),
                (self.data.precision, self.usage.precision, "precision"),
                (self.data.performance, self.usage.performance, "performance"),
            ):
                if method in table:
                    self._add(rows, kind, node.func, method, table[method])
            if method not in self.data.performance:
                self._placement_advice(node.func, method, qualified=False)
        return True

    def visit_Import(self, node: cst.Import) -> bool:
        return False  # names in import statements are judged where the program uses them

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        operands = [node.left] + [target.comparator for target in node.comparisons]
        if any(_string_value(operand) == "nccl" for operand in operands):
            code = cst.Module(body=[]).code_for_node(node)
            self._add(self.usage.unsupported, "unsupported", node, code, NCCL_COMPARISON_TIP)
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        pattern = self.data.affinity_patterns.get(node.name.value)
        if pattern is not None:
            start, _ = self._lines(node.name)
            self.usage.affinity.append(AffinityRow(start, start, pattern[0], node.name.value, pattern[1]))
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        pattern = self.data.affinity_patterns.get(node.name.value)
        if pattern is not None:
            start, _ = self._lines(node.name)
            self.usage.affinity.append(AffinityRow(start, start, pattern[0], node.name.value, pattern[1]))
        return True

    # -- custom CUDA operators built from Python ---------------------------------------------

    def _custom_operator(self, node: cst.Call, name: str) -> None:
        short = name.rsplit(".", 1)[-1]
        if not name.startswith("torch.utils.cpp_extension.") or short not in ("CUDAExtension", "load_inline", "load"):
            return
        arguments = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
        positional = [arg.value for arg in node.args if arg.keyword is None]
        extension = _string_value(arguments.get("name", positional[0] if positional else cst.Name("_")))
        extension = extension or "<unnamed>"
        if short == "CUDAExtension":
            self.usage.cuda_ops.append(f"CUDAExtension {extension}")
        elif short == "load_inline":
            has_cuda = "cuda_sources" in arguments or len(positional) >= 3
            functions = arguments.get("functions")
            names = []
            if isinstance(functions, (cst.List, cst.Tuple)):
                names = [_string_value(element.value) for element in functions.elements]
            elif functions is not None and _string_value(functions):
                names = [_string_value(functions)]
            kind = "load_inline (CUDA sources)" if has_cuda else "load_inline"
            if names:
                for function in names:
                    self.usage.cuda_ops.append(f"{kind} {extension}.{function}")
            else:
                self.usage.cuda_ops.append(f"{kind} {extension}")
        else:
            sources = arguments.get("sources", positional[1] if len(positional) > 1 else None)
            texts = []
            if isinstance(sources, (cst.List, cst.Tuple)):
                texts = [_string_value(element.value) or "" for element in sources.elements]
            if not any(text.endswith((".cu", ".cuh")) for text in texts):
                return
            self.usage.cuda_ops.append(f"load {extension} (CUDA sources)")
            # CUDAExtension and load_inline are judged by name (unsupported data); load only
            # when it compiles CUDA sources.
            self._add(
                self.usage.unsupported,
                "unsupported",
                node.func,
                name,
                self.data.unsupported.get(
                    "torch.utils.cpp_extension.CUDAExtension",
                    "a custom CUDA operator: port its kernels to Ascend C",
                ),
            )
