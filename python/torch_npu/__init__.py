# npusim in-tree torch_npu shim: in a source checkout (PYTHONPATH=python) no .pth file is read,
# so this package makes `import torch_npu` work as a program's first line, before torch. It is
# not part of the wheel; pip-installed npusim does the same with npusim-torch_npu.pth.
import _npusim_torch_npu_hook

_npusim_torch_npu_hook.load_into(globals())
