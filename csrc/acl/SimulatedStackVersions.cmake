# NPUSIM_CANN_VERSION and NPUSIM_DRIVER_VERSION: the versions npusim's simulated stack reports,
# read from the one file that npu-smi, the doctor and torch.version.cann also read.
# No include guard: each directory scope that includes it gets the variables.
file(STRINGS "${NPUSIM_DATA_DIR}/simulated_stack.ini" _npusim_stack_lines REGEX "^[a-z_]+ *= *")
foreach(_line IN LISTS _npusim_stack_lines)
  if(_line MATCHES "^cann_version *= *([^ #]+)")
    set(NPUSIM_CANN_VERSION "${CMAKE_MATCH_1}")
  elseif(_line MATCHES "^driver_version *= *([^ #]+)")
    set(NPUSIM_DRIVER_VERSION "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT NPUSIM_CANN_VERSION OR NOT NPUSIM_DRIVER_VERSION)
  message(FATAL_ERROR "simulated_stack.ini names no cann_version or driver_version")
endif()
