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

# npusim_hot_path_options(TARGET): compile options for the libraries every operator call runs through
# (the runtime and the backend).
# - TLS descriptors (-mtls-dialect=gnu2): their thread-local blocks are small (large per-thread tables
#   live on the heap, csrc/backend/device/HeapThreadLocal.h), so the dynamic linker places them in the
#   static TLS area and an access costs two instructions instead of a __tls_get_addr call (several per
#   operator). Where the area is full the descriptors fall back to dynamic TLS: the library always
#   loads. (On AArch64 descriptors are the default and the flag does not exist.)
# - -fno-semantic-interposition: calls between a library's own functions go straight to them (no PLT
#   stub) and may be inlined; nothing interposes npusim's symbols.
include(CheckCXXCompilerFlag)
check_cxx_compiler_flag(-mtls-dialect=gnu2 NPUSIM_HAS_TLS_DESCRIPTORS)
check_cxx_compiler_flag(-fno-semantic-interposition NPUSIM_HAS_NO_SEMANTIC_INTERPOSITION)
function(npusim_hot_path_options target)
  if(NPUSIM_HAS_TLS_DESCRIPTORS)
    target_compile_options(${target} PRIVATE -mtls-dialect=gnu2)
  endif()
  if(NPUSIM_HAS_NO_SEMANTIC_INTERPOSITION)
    target_compile_options(${target} PRIVATE -fno-semantic-interposition)
  endif()
endfunction()
