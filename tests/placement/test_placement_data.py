"""Checks npusim's placement data files against the installed PyTorch.

The files live in ``python/npusim/data/placement`` and are read by the C++ operator executor; their
format is specified in the README next to them. These tests need only ``torch`` (no npusim build):

- every rule has the documented fields and values, and no (operator, condition) pair repeats;
- every operator name exists in ``torch._C._dispatch_get_all_op_names()`` -- names PyTorch lacks are
  reported and counted, not failed;
- inferred rules are explained by a ``# inferred:`` comment, and the headers name their sources;
- the dtype table names real dtypes.

Run ``python -m pytest tests/placement -q``; the summary counts are printed even when output is
captured.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

REPOSITORY = Path(__file__).resolve().parents[2]
PLACEMENT_DIRECTORY = REPOSITORY / "python" / "npusim" / "data" / "placement"
RELEASE_LINE = "2.13"
OPERATOR_TABLE = PLACEMENT_DIRECTORY / f"torch_npu-{RELEASE_LINE}.tsv"
DTYPE_TABLE = PLACEMENT_DIRECTORY / f"dtypes-{RELEASE_LINE}.tsv"

PLACEMENTS = {"ai_core", "ai_cpu", "cpu_fallback"}
SYNC_VALUES = {"yes", "no"}
CONDITION_KEYS = {"dtype", "index_dtype"}
DTYPE_NAMES = {
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex32", "complex64", "complex128", "uint16", "uint32", "uint64",
}
DTYPE_RULES = {"cast_on_to_copy", "reject", "reject_detail", "ai_cpu"}
COMPOSITE_KEYS = (
    "CompositeImplicitAutograd",
    "CompositeExplicitAutograd",
    "CompositeExplicitAutogradNonFunctional",
)
OPERATOR_PATTERN = re.compile(r"^(aten|npu)::[A-Za-z_][A-Za-z0-9_]*(\.([A-Za-z0-9_]+|\*))?$")
# Names the table may carry although PyTorch 2.13 lacks them; kept small on purpose.
MAXIMUM_UNKNOWN_NAMES = 5


@dataclass(frozen=True)
class OperatorRule:
    line_number: int
    operator: str
    placement: str
    condition: str
    sync: str
    source: str

    @property
    def is_wildcard(self) -> bool:
        return self.operator.endswith(".*")

    @property
    def base_name(self) -> str:
        return self.operator.removeprefix("aten::").split(".")[0]


def read_rules(path: Path, field_count: int) -> tuple[list[tuple[int, list[str]]], list[str]]:
    """Returns ((line number, fields) for each rule, comment lines) of a placement data file."""
    rules = []
    comments = []
    for line_number, raw_line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if raw_line.startswith("#"):
            comments.append(raw_line)
            continue
        if not raw_line.strip():
            continue
        fields = raw_line.split("\t")
        assert len(fields) == field_count, (
            f"{path.name}:{line_number}: expected {field_count} TAB-separated fields, "
            f"got {len(fields)}: {raw_line!r}"
        )
        rules.append((line_number, fields))
    return rules, comments


def read_operator_table(path: Path) -> list[OperatorRule]:
    rules, _ = read_rules(path, 5)
    return [OperatorRule(line_number, *fields) for line_number, fields in rules]


def inferred_comment_paragraphs(path: Path) -> list[str]:
    """Consecutive comment lines, joined, for each paragraph that contains '# inferred:'."""
    paragraphs, current = [], []
    for raw_line in path.read_text(encoding="utf-8").splitlines():
        if raw_line.startswith("#"):
            current.append(raw_line)
            continue
        if current:
            paragraphs.append("\n".join(current))
        current = []
    if current:
        paragraphs.append("\n".join(current))
    return [paragraph for paragraph in paragraphs if "# inferred:" in paragraph]


@pytest.fixture(scope="module")
def all_operator_names() -> set[str]:
    # aten operators, and torch_npu's own (npu::, registered by npusim's csrc/ops).
    return {name for name in torch._C._dispatch_get_all_op_names() if name.startswith(("aten::", "npu::"))}


@pytest.fixture(scope="module")
def operator_rules() -> list[OperatorRule]:
    return read_operator_table(OPERATOR_TABLE)


def expand(rule: OperatorRule, all_operator_names: set[str]) -> set[str]:
    """The overload names a rule covers in the installed PyTorch."""
    if not rule.is_wildcard:
        return {rule.operator} & all_operator_names
    base = rule.operator.removesuffix(".*")
    return {name for name in all_operator_names if name == base or name.startswith(base + ".")}


def has_kernel(name: str, dispatch_key: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(name, dispatch_key)


def test_files_exist_with_provenance_header():
    for path in (OPERATOR_TABLE, DTYPE_TABLE):
        assert path.is_file(), path
        header = "\n".join(
            line for line in path.read_text(encoding="utf-8").splitlines()[:20] if line.startswith("#")
        )
        assert RELEASE_LINE in header, f"{path.name}: header must name the release line"
        assert re.search(r"\b20\d\d-\d\d-\d\d\b", header), f"{path.name}: header must carry a date"
    operator_header = OPERATOR_TABLE.read_text(encoding="utf-8").split("\n\n")[0]
    for needle in (
        "Ascend/op-plugin",
        "op_plugin/config/op_plugin_functions.yaml",
        "Ascend/pytorch",
        "torch_npu/csrc/aten/npu_native_functions.yaml",
        "CompositeImplicitAutograd",
    ):
        assert needle in operator_header, f"operator table header lacks {needle!r}"
    assert re.search(r"commit [0-9a-f]{40}", operator_header), "header must name the commits read"


def test_operator_rules_have_valid_fields(operator_rules):
    assert operator_rules, "the operator table is empty"
    for rule in operator_rules:
        where = f"{OPERATOR_TABLE.name}:{rule.line_number}"
        assert OPERATOR_PATTERN.match(rule.operator), f"{where}: bad operator {rule.operator!r}"
        assert rule.placement in PLACEMENTS, f"{where}: bad placement {rule.placement!r}"
        assert rule.sync in SYNC_VALUES, f"{where}: bad sync {rule.sync!r}"
        assert rule.source.strip() and rule.source == rule.source.strip(), f"{where}: bad source"
        if rule.condition == "-":
            continue
        key, separator, values = rule.condition.partition("=")
        assert separator and key in CONDITION_KEYS, f"{where}: bad condition {rule.condition!r}"
        dtypes = values.split(",")
        assert dtypes and all(dtype in DTYPE_NAMES for dtype in dtypes), (
            f"{where}: bad dtype list {values!r}"
        )
        assert len(set(dtypes)) == len(dtypes), f"{where}: repeated dtype in {values!r}"


def test_no_duplicate_rules(operator_rules):
    counts = Counter((rule.operator, rule.condition) for rule in operator_rules)
    duplicates = sorted(key for key, count in counts.items() if count > 1)
    assert not duplicates, f"duplicate (operator, condition) pairs: {duplicates}"


def test_conditional_rules_refine_a_listed_operator(operator_rules):
    unconditional = {rule.operator for rule in operator_rules if rule.condition == "-"}
    orphans = [
        rule.operator for rule in operator_rules
        if rule.condition != "-" and rule.operator not in unconditional
    ]
    assert not orphans, f"conditional rules without an unconditional line: {orphans}"


def test_inferred_rules_are_explained(operator_rules):
    paragraphs = "\n".join(inferred_comment_paragraphs(OPERATOR_TABLE))
    unexplained = [
        rule.operator for rule in operator_rules
        if "inferred" in rule.source and rule.base_name not in paragraphs
    ]
    assert not unexplained, f"inferred rules without a '# inferred:' comment: {unexplained}"


def test_operator_names_exist_in_pytorch(operator_rules, all_operator_names, capsys):
    unknown = sorted({rule.operator for rule in operator_rules if not expand(rule, all_operator_names)})
    with capsys.disabled():
        print(f"\n[placement] operator names PyTorch {torch.__version__} lacks: {len(unknown)}")
        for name in unknown:
            print(f"[placement]   {name}")
    if unknown:
        warnings.warn(f"{len(unknown)} listed operators do not exist in PyTorch {torch.__version__}: {unknown}")
    assert len(unknown) <= MAXIMUM_UNKNOWN_NAMES, (
        f"{len(unknown)} unknown names; fix the name mismatches: {unknown}"
    )


def test_dtype_table(capsys):
    rules, _ = read_rules(DTYPE_TABLE, 6)
    assert rules, "the dtype table is empty"
    seen = Counter()
    for line_number, (dtype, rule, target, error_code, message, source) in rules:
        where = f"{DTYPE_TABLE.name}:{line_number}"
        assert dtype in DTYPE_NAMES and isinstance(getattr(torch, dtype), torch.dtype), f"{where}: {dtype!r}"
        assert rule in DTYPE_RULES, f"{where}: bad rule {rule!r}"
        assert message.strip() and source.strip(), f"{where}: empty message or source"
        if rule == "ai_cpu":
            assert (target, error_code, message) == ("-", "-", "-"), f"{where}: ai_cpu takes no target/code/message"
        elif rule == "cast_on_to_copy":
            assert target in DTYPE_NAMES and error_code == "-", f"{where}: bad target/error code"
        else:
            assert target == "-", f"{where}: target only applies to cast_on_to_copy"
            assert re.fullmatch(r"ERR\d{5}|EZ\d{4}", error_code), f"{where}: bad error code {error_code!r}"
        seen[(dtype, rule)] += 1
    duplicates = [key for key, count in seen.items() if count > 1]
    assert not duplicates, f"duplicate dtype rules: {duplicates}"
    assert ("float64", "cast_on_to_copy") in seen
    assert ("uint64", "reject") in seen
    assert ("float64", "ai_cpu") in seen
    with capsys.disabled():
        print(f"[placement] dtype rules: {len(rules)}")


def test_summary_counts(operator_rules, all_operator_names, capsys):
    covered = set()
    for rule in operator_rules:
        covered |= expand(rule, all_operator_names)
    unconditional = [rule for rule in operator_rules if rule.condition == "-"]
    ai_core = [rule for rule in unconditional if rule.placement == "ai_core"]
    ai_cpu_rules = [rule for rule in operator_rules if rule.placement == "ai_cpu"]
    ai_cpu_always = [rule for rule in unconditional if rule.placement == "ai_cpu"]
    sync = [rule for rule in operator_rules if rule.sync == "yes"]
    with_cpu_kernel = {name for name in all_operator_names if has_kernel(name, "CPU")}
    not_listed = with_cpu_kernel - covered
    implicit = {name for name in not_listed if has_kernel(name, "CompositeImplicitAutograd")}
    composite = {name for name in not_listed if any(has_kernel(name, key) for key in COMPOSITE_KEYS)}
    fallback = sorted(not_listed - composite)
    with capsys.disabled():
        print(f"[placement] release line {RELEASE_LINE}, PyTorch {torch.__version__}")
        print(f"[placement] aten operator overloads in PyTorch: {len(all_operator_names)}, "
              f"with a CPU kernel: {len(with_cpu_kernel)}")
        print(f"[placement] rules: {len(operator_rules)} "
              f"({len(unconditional)} unconditional, {len(operator_rules) - len(unconditional)} conditional)")
        print(f"[placement] AI Core overloads (unconditional ai_core): {len(ai_core)}")
        print(f"[placement] AI CPU rules: {len(ai_cpu_rules)} "
              f"({len(ai_cpu_always)} unconditional, {len(ai_cpu_rules) - len(ai_cpu_always)} by dtype/index)")
        print(f"[placement] sync rules: {len(sync)}")
        print(f"[placement] CPU-kernel operators not listed: {len(not_listed)}; of these "
              f"CompositeImplicitAutograd: {len(implicit)} -> {len(not_listed - implicit)} left; "
              f"any Composite* kernel: {len(composite)} -> CPU fallback: {len(fallback)}")
    assert ai_core and ai_cpu_rules and sync
    # The contract's example of the fallback warning must come out as a fallback.
    assert "aten::linalg_lstsq.out" in fallback
    # Core training operators must not.
    for name in ("aten::add.Tensor", "aten::mm", "aten::convolution", "aten::native_layer_norm",
                 "aten::embedding_dense_backward", "aten::_softmax", "aten::nll_loss_forward"):
        assert name in covered, name
