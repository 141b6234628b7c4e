# Finds the dependencies that scripts/setup installs. ONNX and ONNX Runtime come from .deps/ (ONNX
# built from its PyPI sources; ONNX Runtime's library from the npm package onnxruntime-node, headers
# from Debian's libonnxruntime-dev), not from the system.
# With PTQKIT_FETCH_DEPENDENCIES (the wheel and builds from the sdist) FetchDependencies.cmake
# provides the same targets from pinned source archives instead, and nothing comes from the system.
# Either way the stages link ${PTQKIT_FMT}, ${PTQKIT_RE2} and ${PTQKIT_MINIZIP}.
# A self-contained build (the wheel, the sdist) links every dependency statically, so it builds them
# from source: Debian's static archives use local-exec thread-local storage, which a shared object
# cannot hold, and Debian's RE2 source lacks its generated tables.
if(PTQKIT_SELF_CONTAINED AND NOT PTQKIT_FETCH_DEPENDENCIES)
  message(FATAL_ERROR "ptqkit: PTQKIT_SELF_CONTAINED=ON needs PTQKIT_FETCH_DEPENDENCIES=ON (static, "
                      "position-independent dependencies are built from their pinned sources)")
endif()
if(PTQKIT_FETCH_DEPENDENCIES)
  include(${CMAKE_CURRENT_LIST_DIR}/FetchDependencies.cmake)
else()
  find_package(Protobuf REQUIRED)
  # The ONNX library (protos, checker, shape inference, version converter) that scripts/setup builds
  # from its source distribution; never the distribution's older libonnx-dev.
  set(ONNX_ROOT "${CMAKE_CURRENT_SOURCE_DIR}/.deps/onnx" CACHE PATH
      "Install prefix of the ONNX library built by scripts/setup")
  find_package(ONNX 1.19 REQUIRED CONFIG PATHS "${ONNX_ROOT}" NO_DEFAULT_PATH)
  find_package(nlohmann_json REQUIRED)
  find_package(CLI11 REQUIRED)
  find_package(fmt REQUIRED)
  set(PTQKIT_FMT fmt::fmt)
  find_package(PkgConfig REQUIRED)
  # Node selectors and --blocks patterns: RE2 matches in linear time without recursion (std::regex
  # overflowed the stack on long names and backtracked forever on '(a+)+$').
  pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
  set(PTQKIT_RE2 PkgConfig::RE2)
  pkg_check_modules(MINIZIP REQUIRED IMPORTED_TARGET minizip)
  set(PTQKIT_MINIZIP PkgConfig::MINIZIP)
endif()
# A wheel build (pip install ., SKBUILD) builds neither tests nor benchmarks.
if(NOT SKBUILD)
  find_package(GTest REQUIRED)
endif()

set(ONNXRUNTIME_ROOT "${CMAKE_CURRENT_SOURCE_DIR}/.deps/onnxruntime" CACHE PATH
    "Folder with include/onnxruntime_cxx_api.h and lib/libonnxruntime.so.1 (see scripts/setup)")
if(NOT EXISTS "${ONNXRUNTIME_ROOT}/include/onnxruntime_cxx_api.h" OR
   NOT EXISTS "${ONNXRUNTIME_ROOT}/lib/libonnxruntime.so.1")
  message(FATAL_ERROR "ONNX Runtime not found under ${ONNXRUNTIME_ROOT}: run scripts/setup first")
endif()
add_library(onnxruntime::onnxruntime SHARED IMPORTED)
set_target_properties(onnxruntime::onnxruntime PROPERTIES
  IMPORTED_LOCATION "${ONNXRUNTIME_ROOT}/lib/libonnxruntime.so.1"
  IMPORTED_SONAME "libonnxruntime.so.1"
  INTERFACE_INCLUDE_DIRECTORIES "${ONNXRUNTIME_ROOT}/include")
# Executables find the library where setup put it, without LD_LIBRARY_PATH.
set(CMAKE_BUILD_RPATH "${ONNXRUNTIME_ROOT}/lib")
