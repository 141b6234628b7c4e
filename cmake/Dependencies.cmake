# Finds the dependencies that scripts/setup installs. ONNX Runtime comes from .deps/ (library from
# the npm package onnxruntime-node, headers from Debian's libonnxruntime-dev), not from the system.
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED CONFIG)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
# A wheel build (pip install ., SKBUILD) builds neither tests nor benchmarks.
if(NOT SKBUILD)
  find_package(GTest REQUIRED)
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(MINIZIP REQUIRED IMPORTED_TARGET minizip)

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
