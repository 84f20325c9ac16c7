from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused_scale",
    ext_modules=[
        CUDAExtension(
            name="fused_scale_cuda",
            sources=["csrc/fused_scale.cpp", "csrc/fused_scale_kernel.cu"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
