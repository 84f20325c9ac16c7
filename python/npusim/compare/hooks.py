"""The dump session: msprobe's hooks on APIs, modules and their backward passes.

- **APIs** (levels L1 and mix): the attributes of :mod:`.api_catalog` are replaced by wrappers.
  A call is named ``{prefix}.{api}.{n}.forward`` (``n`` counts the calls of that API in the
  step); its inputs are summarised before it runs, its outputs after. Calls made inside another
  dumped call (``torch.layer_norm`` inside ``F.layer_norm``) are not dumped, as in msprobe. The
  backward entry ``{prefix}.{api}.{n}.backward`` comes from a hook on the autograd node of the
  first output tensor, as msprobe's: its ``input`` are the gradients arriving at that node (of the
  call's outputs), its ``output`` the gradients the node hands on (of its inputs; for an API
  built of several autograd nodes, those of its last node).
- **Modules** (levels L0 and mix): every submodule of a model (the model itself is not dumped)
  gets ``Module.{path}.{Class}.forward.{n}`` with its inputs, outputs and own parameters, a
  ``...backward.{n}`` entry from ``torch.utils.hooks.BackwardHook`` (the gradients of its
  outputs and inputs) and ``Module.{path}.{Class}.parameters_grad.{n}`` with its parameters'
  gradients. Without a model (``npusim compare``), every module called from outside any other
  module is taken as a model.
- **Steps**: :meth:`DumpSession.step` ends a step (files written, counters reset); the session
  can also end one at each ``optimizer.step()`` (:meth:`DumpSession.mark_step_boundary`).

Nothing of the dump may break the program: an error inside a hook is reported once on stderr
and the call goes on undumped.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import os
import sys
import threading
import warnings
import weakref
from collections import defaultdict
from typing import Any, Callable

import torch

from .api_catalog import ApiCatalog, ApiTarget
from .dump_config import DumpConfig
from .dump_scope import DumpScope
from .dump_writer import DumpWriter
from .tensor_summary import ValueSummarizer

__all__ = ["DumpSession", "StepLimitReached", "active_session", "set_active_session"]

_ACTIVE: "DumpSession | None" = None


def active_session() -> "DumpSession | None":
    """The session ``npusim compare`` runs the program under (msprobe's PrecisionDebugger then
    leaves the dumping to it), or None."""
    return _ACTIVE


def set_active_session(session: "DumpSession | None") -> None:
    global _ACTIVE
    _ACTIVE = session

_PACKAGE_DIRECTORY = os.path.dirname(os.path.abspath(__file__)) + os.sep
_DROPOUT_APIS = ("Functional.dropout.", "Functional.dropout2d.", "Functional.dropout3d.", "Functional.alpha_dropout.",
                 "Functional.feature_alpha_dropout.", "Torch.dropout.")


class StepLimitReached(SystemExit):
    """Ends the program after the last step ``npusim compare --steps N`` asked for."""

    def __init__(self, steps: int) -> None:
        super().__init__(0)
        self.steps = steps


def _first_tensor(value: Any, depth: int = 0) -> torch.Tensor | None:
    if depth > 50:
        return None
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        for item in value:
            found = _first_tensor(item, depth + 1)
            if found is not None:
                return found
    return None


def _as_tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


def _call_stack(skip_directory: str = _PACKAGE_DIRECTORY) -> tuple[str, ...]:
    """The caller's stack in msprobe's stack.json text, innermost first, without npusim's dump
    frames."""
    lines = []
    frame = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(skip_directory):
            source = linecache.getline(path, frame.f_lineno).strip()
            if source:
                lines.append(f"File {path}, line {frame.f_lineno}, in {frame.f_code.co_name}, \n {source}")
        frame = frame.f_back
    return tuple(lines)


class _ModuleCall:
    __slots__ = ("forward_name", "backward_name", "hook", "collect", "prefix")

    def __init__(self, forward_name: str, backward_name: str, prefix: str, collect: bool) -> None:
        self.forward_name = forward_name
        self.backward_name = backward_name
        self.prefix = prefix
        self.collect = collect
        self.hook = None


class DumpSession:
    """One process's dump: msprobe's service (``start`` / ``stop`` / ``step``)."""

    def __init__(self, config: DumpConfig, numerics_probe: Any = None, discover_models: bool = False) -> None:
        """``numerics_probe`` (optional) has ``record()`` (the numerics switches of the current
        call, kept in npusim_numerics.json) and ``header()`` (the process-wide ones);
        ``discover_models`` hooks the modules of any model the program calls."""
        self.config = config
        self.writer = DumpWriter(config.task, config.level, config.extra_info)
        self.summarizer = ValueSummarizer(config.precision, config.summary_mode,
                                          self.writer.save_tensor if config.dumps_tensors else None)
        self.scope = DumpScope(config)
        self.numerics_probe = numerics_probe
        self.discover_models = discover_models
        self.loop = 0
        self.init_step = 0
        self.running = False
        self.finished = False
        self.step_limit: int | None = None
        self._lock = threading.RLock()
        self._local = threading.local()
        self._api_counts: dict[str, int] = defaultdict(int)
        self._module_counts: dict[str, int] = {}
        self._grad_calls: dict[str, list] = {}
        self._grad_hooks: dict[tuple[str, str], Any] = {}
        self._hooked_modules: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()
        self._roots: "weakref.WeakSet[torch.nn.Module]" = weakref.WeakSet()
        self._installed: list[ApiTarget] = []
        self._discovery_handle = None
        self._errors_reported: set[str] = set()
        self.rank: int | None = None

    # -----------------------------------------------------------------------------------------
    # msprobe's start / stop / step

    @property
    def current_step(self) -> int:
        return self.loop + self.init_step

    def start(self, model: Any = None) -> None:
        if self.finished:
            return
        step = self.current_step
        if self.config.step and step > max(self.config.step):
            self.finished = True
            self.running = False
            return
        if self.config.hooks_apis and not self._installed:
            self.install_api_hooks()
        if self.config.hooks_modules:
            if model is not None:
                for single in (model if isinstance(model, (list, tuple)) else [model]):
                    self.hook_model(single)
            elif self.discover_models:
                self._install_model_discovery()
        if self.config.step and step not in self.config.step:
            return
        self.rank = self._distributed_rank()
        if self.config.rank and self.rank not in self.config.rank:
            return
        if not self.writer.is_open:
            self.writer.open(self.config.dump_path, step, self.rank)
            self._write_numerics_header()
        self.running = True

    def stop(self) -> None:
        self.running = False
        with self._lock:
            self.writer.flush()

    def step(self) -> None:
        if self.finished:
            return
        with self._lock:
            self.writer.close()
        self.loop += 1
        self._api_counts.clear()
        self._module_counts.clear()
        self._grad_calls.clear()
        self.scope = DumpScope(self.config)

    def close(self) -> None:
        self.running = False
        with self._lock:
            self.writer.close()
        self.remove_api_hooks()
        if self._discovery_handle is not None:
            self._discovery_handle.remove()
            self._discovery_handle = None

    def mark_step_boundary(self) -> None:
        """The end of a training step in a program that does not call ``step()`` itself (the
        optimizer's step): the step's files are written and the next step starts; after
        ``step_limit`` steps the program ends (:class:`StepLimitReached`)."""
        self.stop()
        self.step()
        if self.step_limit is not None and self.loop >= self.step_limit:
            self.finished = True
            raise StepLimitReached(self.loop)
        self.start()

    @staticmethod
    def _distributed_rank() -> int | None:
        try:
            import torch.distributed as distributed

            if distributed.is_available() and distributed.is_initialized():
                return distributed.get_rank()
        except Exception:
            pass
        return None

    def _write_numerics_header(self) -> None:
        if self.numerics_probe is None:
            return
        try:
            header = self.numerics_probe.header()
        except Exception:
            header = {}
        self.writer.set_numerics_header(**header)

    # -----------------------------------------------------------------------------------------
    # Guards

    @contextlib.contextmanager
    def internal(self):
        """Work of npusim's own (reading a loss, statistics) that must not be dumped."""
        self._enter_busy()
        try:
            yield
        finally:
            self._leave_busy()

    def _busy(self) -> bool:
        return getattr(self._local, "busy", 0) > 0

    def _enter_busy(self) -> None:
        self._local.busy = getattr(self._local, "busy", 0) + 1

    def _leave_busy(self) -> None:
        self._local.busy -= 1

    def _report(self, where: str, error: BaseException) -> None:
        key = f"{where}:{type(error).__name__}"
        if key in self._errors_reported:
            return
        self._errors_reported.add(key)
        print(f"[npusim compare] dump skipped in {where}: {type(error).__name__}: {error}", file=sys.stderr)

    def _module_stack(self) -> list[_ModuleCall]:
        stack = getattr(self._local, "modules", None)
        if stack is None:
            stack = self._local.modules = []
        return stack

    # -----------------------------------------------------------------------------------------
    # APIs

    def install_api_hooks(self) -> None:
        """Replace the dumped APIs' attributes by wrappers (once)."""
        if self._installed:
            return
        for target in ApiCatalog.targets():
            wrapper = self._make_wrapper(target)
            try:
                setattr(target.owner, target.attribute, wrapper)
            except (AttributeError, TypeError):
                continue
            self._installed.append(target)

    def remove_api_hooks(self) -> None:
        for target in reversed(self._installed):
            try:
                setattr(target.owner, target.attribute, target.original)
            except (AttributeError, TypeError):
                pass
        self._installed.clear()

    def _make_wrapper(self, target: ApiTarget) -> Callable:
        session = self
        original = target.original
        key = f"{target.prefix}.{target.name}."

        def api_wrapper(*args, **kwargs):
            if session._busy() or not session.running:
                return original(*args, **kwargs)
            return session._dumped_call(key, original, args, kwargs)

        try:
            functools.update_wrapper(api_wrapper, original)
        except (AttributeError, TypeError):
            pass
        api_wrapper._npusim_compare_original = original
        return api_wrapper

    def _dumped_call(self, key: str, original: Callable, args: tuple, kwargs: dict) -> Any:
        index = self._api_counts[key]
        forward_name = f"{key}{index}.forward"
        backward_name = f"{key}{index}.backward"
        collect = False
        self._enter_busy()
        try:
            collect = self.scope.check(forward_name)
            if collect:
                self._record_forward_inputs(forward_name, args, kwargs, is_module=False)
        except Exception as error:
            self._report(forward_name, error)
        finally:
            self._leave_busy()
        # Calls made inside this one are not dumped (msprobe's inner-call rule).
        self._enter_busy()
        try:
            result = original(*args, **kwargs)
        finally:
            self._leave_busy()
        self._enter_busy()
        try:
            if collect:
                self._record_forward_output(forward_name, result, parameters=None)
            if self.config.dumps("backward", "input") or self.config.dumps("backward", "output"):
                self._hook_api_backward(key, backward_name, args, kwargs, result)
        except Exception as error:
            self._report(forward_name, error)
        finally:
            self._leave_busy()
            self._api_counts[key] = index + 1
        return result

    def _record_forward_inputs(self, name: str, args: tuple, kwargs: dict, is_module: bool) -> None:
        info: dict[str, Any] = {}
        if self.config.dumps("forward", "input"):
            info["input_args"] = self.summarizer.summarize(tuple(args), f"{name}.input")
            info["input_kwargs"] = self.summarizer.summarize(dict(kwargs), f"{name}.kwargs")
        stack = _call_stack()
        numerics = None
        if self.numerics_probe is not None and not is_module:
            numerics = self.numerics_probe.record()
        with self._lock:
            if not self.writer.is_open:
                return
            if info:
                self.writer.update(name, info)
            self.writer.add_stack(name, stack)
            if numerics:
                self.writer.add_numerics(name, numerics)
            # construct.json: the enclosing module of a module, or of an API at level mix.
            if self.config.level == "mix" or is_module:
                modules = self._module_stack()
                self.writer.add_construct(name, modules[-1].forward_name if modules else None)

    def _record_forward_output(self, name: str, output: Any, parameters: dict | None) -> None:
        info: dict[str, Any] = {}
        if self.config.dumps("forward", "output"):
            info["output"] = self.summarizer.summarize(_as_tuple(output), f"{name}.output")
        if parameters is not None and info:
            info["parameters"] = self.summarizer.summarize(parameters, f"{name}.parameters")
        with self._lock:
            if self.writer.is_open and info:
                self.writer.update(name, info)

    def _hook_api_backward(self, key: str, backward_name: str, args: tuple, kwargs: dict, result: Any) -> None:
        if key.startswith(_DROPOUT_APIS):
            probability = args[1] if len(args) >= 2 else kwargs.get("p", 0.5)
            if probability == 0:
                return
        output = _first_tensor(result)
        if output is None or not (output.requires_grad and torch.is_grad_enabled()) or output.grad_fn is None:
            return
        session = self
        if not self.scope.check(backward_name):
            return

        def backward_hook(grad_inputs, grad_outputs):
            session._record_backward(backward_name, grad_outputs, grad_inputs)

        output.grad_fn.register_hook(backward_hook)

    def _record_backward(self, name: str, grads_in: Any, grads_out: Any) -> None:
        """``grads_in``: the gradients of the forward outputs (the entry's ``input``);
        ``grads_out``: those of the forward inputs (its ``output``)."""
        self._enter_busy()
        try:
            info: dict[str, Any] = {}
            if self.config.dumps("backward", "input"):
                info["input"] = self.summarizer.summarize(_as_tuple(grads_in), f"{name}.input")
            if self.config.dumps("backward", "output"):
                info["output"] = self.summarizer.summarize(_as_tuple(grads_out), f"{name}.output")
            with self._lock:
                if self.writer.is_open and info:
                    self.writer.update(name, info)
        except Exception as error:
            self._report(name, error)
        finally:
            self._leave_busy()

    # -----------------------------------------------------------------------------------------
    # Modules

    def hook_model(self, model: torch.nn.Module) -> None:
        """Hooks every submodule of ``model`` (not the model itself), once."""
        if not isinstance(model, torch.nn.Module) or model in self._roots:
            return
        self._roots.add(model)
        # BackwardHook warns for a module whose inputs need no gradient (the first layer); the
        # dump expects that, as msprobe's does.
        warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients are computed")
        for path, module in model.named_modules():
            if module is model or module in self._hooked_modules:
                continue
            if type(module).__name__ == "FullyShardedDataParallel":
                continue
            self._hooked_modules.add(module)
            prefix = f"Module.{path}.{type(module).__name__}."
            module.register_forward_pre_hook(functools.partial(self._module_pre_hook, prefix), with_kwargs=True)
            module.register_forward_hook(functools.partial(self._module_post_hook, prefix), with_kwargs=True)

    def _install_model_discovery(self) -> None:
        if self._discovery_handle is not None:
            return
        session = self

        def discover(module, args):
            if not session.running or module in session._hooked_modules or module in session._roots:
                return None
            session._enter_busy()
            try:
                session.hook_model(module)
            except Exception as error:
                session._report("module discovery", error)
            finally:
                session._leave_busy()
            return None

        self._discovery_handle = torch.nn.modules.module.register_module_forward_pre_hook(discover)

    def _module_pre_hook(self, prefix: str, module: torch.nn.Module, args: tuple, kwargs: dict):
        if not self.running or self._busy():
            return None
        self._enter_busy()
        try:
            index = self._module_counts.get(prefix, -1) + 1
            self._module_counts[prefix] = index
            call = _ModuleCall(f"{prefix}forward.{index}", f"{prefix}backward.{index}", prefix, False)
            self.scope.begin_module(call.forward_name)
            call.collect = self.scope.check(call.forward_name)
            if call.collect:
                self._record_forward_inputs(call.forward_name, args, kwargs, is_module=True)
            self._module_stack().append(call)
            if torch.is_grad_enabled() and (self.config.dumps("backward", "input")
                                            or self.config.dumps("backward", "output")):
                args = self._setup_module_backward(module, call, args)
                return args, kwargs
        except Exception as error:
            self._report(prefix, error)
        finally:
            self._leave_busy()
        return None

    def _module_post_hook(self, prefix: str, module: torch.nn.Module, args: tuple, kwargs: dict, output: Any):
        stack = self._module_stack()
        if not stack or stack[-1].prefix != prefix:
            return None
        call = stack.pop()
        self._enter_busy()
        try:
            if call.collect:
                parameters = {name: parameter for name, parameter in module.named_parameters(recurse=False)}
                self._record_forward_output(call.forward_name, output, parameters)
                self._hook_parameter_grads(prefix[:-1], module)
            self.scope.end_module(call.forward_name)
            if call.hook is not None:
                return self._rebuild(output, call.hook.setup_output_hook)
        except Exception as error:
            self._report(prefix, error)
        finally:
            self._leave_busy()
        return None

    def _setup_module_backward(self, module: torch.nn.Module, call: _ModuleCall, args: tuple) -> tuple:
        from torch.utils.hooks import BackwardHook

        session = self

        def backward_hook(hooked_module, grad_input, grad_output):
            if session.running and call.collect:
                session._record_backward(call.backward_name, grad_output, grad_input)
            return None

        call.hook = BackwardHook(module, [backward_hook], [])
        return self._rebuild(args, call.hook.setup_input_hook)

    @staticmethod
    def _rebuild(value: Any, setup: Callable) -> Any:
        """Runs ``BackwardHook``'s setup on the tensors of ``value`` that need a gradient and puts
        the hooked tensors back in place. A hooked view may be modified in place afterwards (as
        msprobe allows: its creation record is reset), so ``ReLU(inplace=True)`` keeps working."""
        tensors: list[torch.Tensor] = []

        def collect(item: Any, depth: int = 0) -> None:
            if depth > 50:
                return
            if isinstance(item, torch.Tensor):
                if item.requires_grad:
                    tensors.append(item)
            elif isinstance(item, (list, tuple)):
                for element in item:
                    collect(element, depth + 1)
            elif isinstance(item, dict):
                for element in item.values():
                    collect(element, depth + 1)

        collect(value)
        if not tensors:
            return value
        hooked = iter(setup(tuple(tensors)))

        def rebuild(item: Any, depth: int = 0) -> Any:
            if depth > 50:
                return item
            if isinstance(item, torch.Tensor):
                if not item.requires_grad:
                    return item
                replacement = next(hooked)
                if replacement._base is not None:
                    meta = torch._C._autograd._get_creation_meta(replacement)
                    if meta != torch._C._autograd.CreationMeta.DEFAULT:
                        torch._C._autograd._set_creation_meta(replacement, torch._C._autograd.CreationMeta.DEFAULT)
                return replacement
            if isinstance(item, tuple) and hasattr(item, "_fields"):
                return type(item)(*[rebuild(element, depth + 1) for element in item])
            if isinstance(item, (list, tuple)):
                return type(item)(rebuild(element, depth + 1) for element in item)
            if isinstance(item, dict):
                return {key: rebuild(element, depth + 1) for key, element in item.items()}
            return item

        return rebuild(value)

    def _hook_parameter_grads(self, module_name: str, module: torch.nn.Module) -> None:
        if not (self.config.dumps("backward", "input") or self.config.dumps("backward", "output")):
            return
        for parameter_name, parameter in module.named_parameters(recurse=False):
            if not parameter.requires_grad or (module_name, parameter_name) in self._grad_hooks:
                continue
            accumulator = parameter.expand_as(parameter).grad_fn.next_functions[0][0]
            reference = weakref.ref(parameter)
            accumulator.register_hook(functools.partial(self._parameter_grad_hook, module_name, parameter_name,
                                                        reference))
            # The node is kept so that the parameter keeps this accumulator (and its hook).
            self._grad_hooks[(module_name, parameter_name)] = accumulator

    def _parameter_grad_hook(self, module_name: str, parameter_name: str, reference, *unused) -> None:
        if not self.running:
            return
        parameter = reference()
        if parameter is None or parameter.grad is None:
            return
        record = self._grad_calls.get(module_name)
        if record is None:
            record = self._grad_calls[module_name] = [0, parameter_name]
        elif record[1] == parameter_name:
            record[0] += 1
        grad_name = f"{module_name}.parameters_grad.{record[0]}"
        self._enter_busy()
        try:
            summary = self.summarizer.summarize(parameter.grad, f"{grad_name}.{parameter_name}")
            with self._lock:
                if self.writer.is_open:
                    self.writer.update(grad_name, {parameter_name: [summary]})
        except Exception as error:
            self._report(grad_name, error)
        finally:
            self._leave_busy()
