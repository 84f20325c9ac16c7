# Settings shared by every npusim C++ target; safe to include more than once.
include_guard(GLOBAL)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE RelWithDebInfo)
endif()

find_program(NPUSIM_CCACHE ccache)
if(NPUSIM_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${NPUSIM_CCACHE}")
  set(CMAKE_C_COMPILER_LAUNCHER "${NPUSIM_CCACHE}")
endif()

# NPUSIM_SANITIZE: "address,undefined" or "thread" builds the C++ layers and
# their tests with the named sanitizers (CI does both).
set(NPUSIM_SANITIZE "" CACHE STRING "Sanitizers for the C++ layers (address,undefined | thread)")
if(NPUSIM_SANITIZE)
  add_compile_options(-fsanitize=${NPUSIM_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${NPUSIM_SANITIZE})
endif()

set(NPUSIM_SOURCE_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." CACHE INTERNAL "npusim source root")
set(NPUSIM_DATA_DIR "${NPUSIM_SOURCE_ROOT}/python/npusim/data" CACHE INTERNAL "npusim data files")
