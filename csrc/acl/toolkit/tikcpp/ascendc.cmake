# npusim's ascendc.cmake (CANN's tikcpp/ascendc_kernel_cmake/ascendc.cmake).
#
# Programs include this module from ${ASCENDC_CMAKE_DIR} whether or not they build a kernel.
# npusim simulates the NPU on the host and has no Ascend C compiler (bisheng/ccec): a program
# without kernels builds normally against the toolkit tree, and asking for a kernel stops the
# configuration with a clear message instead of a broken build.
include_guard(GLOBAL)

get_filename_component(_npusim_cann_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT EXISTS "${_npusim_cann_root}/include/acl/acl.h")
  # Installed as <root>/tikcpp/ascendc_kernel_cmake: one level less.
  get_filename_component(_npusim_cann_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
endif()
if(NOT DEFINED ASCEND_CANN_PACKAGE_PATH)
  set(ASCEND_CANN_PACKAGE_PATH "${_npusim_cann_root}")
endif()

# The interface target CANN's module gives host code: the toolkit's headers and libraries.
if(NOT TARGET host_intf_pub)
  add_library(host_intf_pub INTERFACE)
  target_include_directories(host_intf_pub INTERFACE "${_npusim_cann_root}/include")
  target_link_directories(host_intf_pub INTERFACE "${_npusim_cann_root}/lib64")
endif()

function(_npusim_no_ascendc_kernels what)
  message(FATAL_ERROR
    "${what}: npusim cannot compile Ascend C kernels. npusim simulates the NPU on the host and "
    "ships no Ascend C compiler (bisheng/ccec), so a kernel source cannot be built here. Programs "
    "that only call AscendCL build against this toolkit; to run a custom kernel, use a real CANN "
    "toolkit.")
endfunction()

function(ascendc_library)
  _npusim_no_ascendc_kernels("ascendc_library(${ARGV0})")
endfunction()
function(ascendc_fatbin_library)
  _npusim_no_ascendc_kernels("ascendc_fatbin_library(${ARGV0})")
endfunction()
function(ascendc_compile_definitions)
  _npusim_no_ascendc_kernels("ascendc_compile_definitions(${ARGV0})")
endfunction()
function(ascendc_compile_options)
  _npusim_no_ascendc_kernels("ascendc_compile_options(${ARGV0})")
endfunction()
function(ascendc_include_directories)
  _npusim_no_ascendc_kernels("ascendc_include_directories(${ARGV0})")
endfunction()
