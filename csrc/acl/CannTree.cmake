# The CANN-style toolkit tree that C and C++ programs build against (npusim cann-home):
#
#   <root>/set_env.sh                         ASCEND_TOOLKIT_HOME, ASCEND_HOME_PATH, LD_LIBRARY_PATH ...
#   <root>/include/acl/*.h, acl/error_codes/  AscendCL headers
#   <root>/lib64/libascendcl.so               the AscendCL runtime API
#   <root>/lib64/libacl_rt.so                 the newer runtime library name (a linker script)
#   <root>/include/aclnn/*.h, aclnnop/*.h     the aclnn operator API
#   <root>/lib64/libopapi.so, libnnopbase.so, libopapi_math.so, libopapi_nn.so: the aclnn
#                                             operators (built with the PyTorch backend only)
#   <root>/{compiler,tools,}/tikcpp/ascendc_kernel_cmake/ascendc.cmake
#   <root>/<arch>-linux/ascend_toolkit_install.info   the simulated CANN version
#   <root>/opp/version.info
#
# The extra library names are GNU ld linker scripts (INPUT(libascendcl.so)), as glibc ships
# libc.so: a program links them by name or full path and records the real library's soname.
# npusim_assemble_cann_tree(dir) builds the tree in `dir` for tests and the developer build;
# npusim_install_cann_tree(destination) installs it into the wheel.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/SimulatedStackVersions.cmake)

set(NPUSIM_CANN_TOOLKIT_SOURCE "${CMAKE_CURRENT_LIST_DIR}/toolkit")
set(NPUSIM_CANN_ARCH_DIR "${CMAKE_SYSTEM_PROCESSOR}-linux")
set(NPUSIM_CANN_KERNEL_CMAKE_DIRS compiler/tikcpp/ascendc_kernel_cmake tools/tikcpp/ascendc_kernel_cmake
    tikcpp/ascendc_kernel_cmake)

# Generated files of the tree, written at configure time into the build directory.
set(_npusim_cann_generated "${CMAKE_BINARY_DIR}/cann-generated")
file(WRITE "${_npusim_cann_generated}/ascend_toolkit_install.info"
     "package_name=Ascend-cann-toolkit\nversion=${NPUSIM_CANN_VERSION}\ninnerversion=npusim\narch=${CMAKE_SYSTEM_PROCESSOR}\nos=linux\npath=npusim simulated toolkit\n")
file(WRITE "${_npusim_cann_generated}/opp-version.info" "Version=${NPUSIM_CANN_VERSION}\n")
foreach(_script acl_rt nnopbase opapi_math opapi_nn)
  if(_script STREQUAL "acl_rt")
    set(_target libascendcl.so)
  else()
    set(_target libopapi.so)
  endif()
  file(WRITE "${_npusim_cann_generated}/lib${_script}.so"
       "/* npusim: lib${_script}.so is a name CANN programs link; the functions are in ${_target}. */\nINPUT(${_target})\n")
endforeach()

function(npusim_assemble_cann_tree dir)
  set(libraries $<TARGET_FILE:ascendcl>)
  set(scripts "${_npusim_cann_generated}/libacl_rt.so")
  set(dependencies ascendcl)
  if(TARGET opapi)
    list(APPEND libraries $<TARGET_FILE:opapi>)
    list(APPEND scripts "${_npusim_cann_generated}/libnnopbase.so" "${_npusim_cann_generated}/libopapi_math.so"
         "${_npusim_cann_generated}/libopapi_nn.so")
    list(APPEND dependencies opapi)
  endif()
  set(commands
      COMMAND ${CMAKE_COMMAND} -E rm -rf "${dir}/include"
      COMMAND ${CMAKE_COMMAND} -E copy_directory "${NPUSIM_CANN_TOOLKIT_SOURCE}/include" "${dir}/include"
      COMMAND ${CMAKE_COMMAND} -E copy "${NPUSIM_CANN_TOOLKIT_SOURCE}/set_env.sh" "${dir}/set_env.sh"
      COMMAND ${CMAKE_COMMAND} -E make_directory "${dir}/lib64" "${dir}/opp" "${dir}/bin" "${dir}/${NPUSIM_CANN_ARCH_DIR}"
      COMMAND ${CMAKE_COMMAND} -E copy ${libraries} ${scripts} "${dir}/lib64/"
      COMMAND ${CMAKE_COMMAND} -E copy "${_npusim_cann_generated}/ascend_toolkit_install.info" "${dir}/${NPUSIM_CANN_ARCH_DIR}/"
      COMMAND ${CMAKE_COMMAND} -E copy "${_npusim_cann_generated}/opp-version.info" "${dir}/opp/version.info")
  foreach(kernelDir IN LISTS NPUSIM_CANN_KERNEL_CMAKE_DIRS)
    list(APPEND commands COMMAND ${CMAKE_COMMAND} -E copy "${NPUSIM_CANN_TOOLKIT_SOURCE}/tikcpp/ascendc.cmake"
         "${dir}/${kernelDir}/ascendc.cmake")
  endforeach()
  add_custom_target(npusim_cann_tree ALL ${commands} DEPENDS ${dependencies}
                    COMMENT "Assembling the CANN toolkit tree in ${dir}" VERBATIM)
endfunction()

function(npusim_install_cann_tree destination)
  install(DIRECTORY "${NPUSIM_CANN_TOOLKIT_SOURCE}/include" DESTINATION "${destination}")
  install(FILES "${NPUSIM_CANN_TOOLKIT_SOURCE}/set_env.sh" DESTINATION "${destination}")
  install(TARGETS ascendcl LIBRARY DESTINATION "${destination}/lib64")
  install(FILES "${_npusim_cann_generated}/libacl_rt.so" DESTINATION "${destination}/lib64")
  if(TARGET opapi)
    install(TARGETS opapi LIBRARY DESTINATION "${destination}/lib64")
    install(FILES "${_npusim_cann_generated}/libnnopbase.so" "${_npusim_cann_generated}/libopapi_math.so"
                  "${_npusim_cann_generated}/libopapi_nn.so" DESTINATION "${destination}/lib64")
  endif()
  install(FILES "${_npusim_cann_generated}/ascend_toolkit_install.info" DESTINATION "${destination}/${NPUSIM_CANN_ARCH_DIR}")
  install(FILES "${_npusim_cann_generated}/opp-version.info" DESTINATION "${destination}/opp" RENAME version.info)
  install(DIRECTORY DESTINATION "${destination}/bin")
  foreach(kernelDir IN LISTS NPUSIM_CANN_KERNEL_CMAKE_DIRS)
    install(FILES "${NPUSIM_CANN_TOOLKIT_SOURCE}/tikcpp/ascendc.cmake" DESTINATION "${destination}/${kernelDir}")
  endforeach()
endfunction()
