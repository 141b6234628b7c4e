# PTQKIT_FETCH_DEPENDENCIES=ON: every library ptqkit needs comes from a pinned, checksummed source
# archive that this configure step downloads, so that `pip install ptqkit-*.tar.gz` (the sdist;
# pyproject.toml turns this on for builds from it; scripts/build_wheel builds the wheel the same
# way) works on a machine with only a C/C++ compiler, CMake and Python. Nothing is looked up on the system. The sources are the ones scripts/setup
# installs, from the registries this project already relies on (Debian's archive, PyPI, npm):
#   protobuf 3.21.12   Debian's upstream tarball (Debian's patches touch only Java, Python, PHP,
#                      tests and other architectures' builds; none changes the C++ library)
#   ONNX 1.23.2        PyPI source distribution (needs CMake >= 3.26 and Python for its protos)
#   ONNX Runtime 1.30  the library from npm's onnxruntime-node, the C/C++ headers from Debian's
#                      libonnxruntime-dev (1.21; the C API is versioned, the library serves older
#                      headers) — exactly what scripts/setup uses
#   RE2 (2022)         the copy npm's re2 1.18.3 vendors: Debian's RE2 tarball lacks the generated
#                      Unicode tables, and later RE2 releases need Abseil
#   zlib + minizip     Debian's zlib 1.2.13 tarball (minizip is its contrib/minizip)
#   fmt, CLI11, nlohmann-json   Debian's tarballs of the versions Debian 12 ships, used header-only
# protobuf and ONNX are built and installed into <build>/_ptqkit_deps once per build folder; RE2 and
# zlib/minizip are compiled as part of this build; downloads are kept in PTQKIT_DOWNLOAD_DIR
# (default <build>/_ptqkit_deps/downloads; set it to share them between builds).
# The result is linked statically (PTQKIT_SELF_CONTAINED), as in the wheel.
set(PTQKIT_DOWNLOAD_DIR "$ENV{PTQKIT_DOWNLOAD_DIR}" CACHE PATH
    "Where PTQKIT_FETCH_DEPENDENCIES keeps its downloads (default <build>/_ptqkit_deps/downloads)")
set(ptqkit_deps "${CMAKE_BINARY_DIR}/_ptqkit_deps")
set(ptqkit_downloads "${PTQKIT_DOWNLOAD_DIR}")
if(NOT ptqkit_downloads)
  set(ptqkit_downloads "${ptqkit_deps}/downloads")
endif()

set(debian "https://deb.debian.org/debian/pool/main")
set(PTQKIT_PROTOBUF_URL "${debian}/p/protobuf/protobuf_3.21.12.orig.tar.gz")
set(PTQKIT_PROTOBUF_SHA256 930c2c3b5ecc6c9c12615cf5ad93f1cd6e12d0aba862b572e076259970ac3a53)
set(PTQKIT_ONNX_URL "https://files.pythonhosted.org/packages/3f/62/bc2dfadb63ecf04cb2d65a6b17751863039d36c65de51d6a3128ab35f1e7/onnx-1.23.2.tar.gz")
set(PTQKIT_ONNX_SHA256 008cb0467b2bbee41448acc7da8b6f4e704624cb0d327a2d5adafc7ce19bc5b8)
set(PTQKIT_ORT_LIBRARY_URL "https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-1.30.0.tgz")
set(PTQKIT_ORT_LIBRARY_SHA256 6e3390d6b783e7be946fad629292799da28d0b42f84856e50d2c1b0383291e75)
set(PTQKIT_ORT_HEADERS_URL "${debian}/o/onnxruntime/libonnxruntime-dev_1.21.0%2bdfsg-1_amd64.deb")
set(PTQKIT_ORT_HEADERS_SHA256 14f7d959d5deacbcf1504830d4189f91fc67382b399ed9ae9d3aa9c4050ced08)
set(PTQKIT_RE2_URL "https://registry.npmjs.org/re2/-/re2-1.18.3.tgz")
set(PTQKIT_RE2_SHA256 2b2ad84c6b3fd7b6861335588693edd8d71d4c966dbf99b90ae7a63592e82fd3)
set(PTQKIT_ZLIB_URL "${debian}/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2")
set(PTQKIT_ZLIB_SHA256 71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1)
set(PTQKIT_FMT_URL "${debian}/f/fmtlib/fmtlib_9.1.0%2bds1.orig.tar.gz")
set(PTQKIT_FMT_SHA256 84ce1c2d0be3a9863935137969dcec6970125caac032f82474640bfc81463583)
set(PTQKIT_CLI11_URL "${debian}/c/cli11/cli11_2.1.2%2bds.orig.tar.xz")
set(PTQKIT_CLI11_SHA256 8143d20b688e98ccce8e24562d3b68e5f47c12e896c42c7ca8553dbde5bed55d)
set(PTQKIT_JSON_URL "${debian}/n/nlohmann-json3/nlohmann-json3_3.11.2.orig.tar.gz")
set(PTQKIT_JSON_SHA256 d69f9deb6a75e2580465c6c4c5111b89c4dc2fa94e3a85fcd2ffcd9a143d9273)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64)$")
  set(ort_npm_arch x64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  set(ort_npm_arch arm64)
else()
  message(FATAL_ERROR "ptqkit: no ONNX Runtime library is pinned for ${CMAKE_SYSTEM_PROCESSOR}; "
                      "fetching dependencies works on Linux x86_64 and aarch64")
endif()
if(CMAKE_VERSION VERSION_LESS 3.26)
  message(FATAL_ERROR "ptqkit: building ONNX from source needs CMake 3.26 or newer, this is "
                      "${CMAKE_VERSION} (`pip install ptqkit-*.tar.gz` gets one from PyPI by itself)")
endif()
# ONNX generates its .proto files with Python: the interpreter the extension is built for.
if(DEFINED Python_EXECUTABLE AND NOT DEFINED Python3_EXECUTABLE)
  set(Python3_EXECUTABLE "${Python_EXECUTABLE}")
endif()
find_package(Python3 REQUIRED COMPONENTS Interpreter)
enable_language(C)  # zlib and minizip

# Downloads URL into the download folder unless a file with the right checksum is already there;
# a wrong checksum is an error that names the URL and both checksums, and leaves nothing behind.
function(ptqkit_download url sha256 out_var)
  get_filename_component(name "${url}" NAME)
  string(REPLACE "%2b" "+" name "${name}")
  set(path "${ptqkit_downloads}/${name}")
  if(EXISTS "${path}")
    file(SHA256 "${path}" have)
    if(have STREQUAL sha256)
      set(${out_var} "${path}" PARENT_SCOPE)
      return()
    endif()
  endif()
  message(STATUS "ptqkit: downloading ${url}")
  file(DOWNLOAD "${url}" "${path}.part" STATUS status TLS_VERIFY ON)
  list(GET status 0 code)
  if(NOT code EQUAL 0)
    file(REMOVE "${path}.part")
    list(GET status 1 reason)
    message(FATAL_ERROR "ptqkit: cannot download ${url}: ${reason}")
  endif()
  file(SHA256 "${path}.part" got)
  if(NOT got STREQUAL sha256)
    file(REMOVE "${path}.part")
    message(FATAL_ERROR "ptqkit: checksum mismatch for ${url}: got ${got}, want ${sha256}")
  endif()
  file(RENAME "${path}.part" "${path}")
  set(${out_var} "${path}" PARENT_SCOPE)
endfunction()

# Unpacks ARCHIVE (its checksum already checked) into a folder of its own under _ptqkit_deps/src,
# once; extra arguments are file patterns to unpack (all files without them).
function(ptqkit_unpack archive out_var)
  get_filename_component(name "${archive}" NAME)
  set(dest "${ptqkit_deps}/src/${name}")
  if(NOT EXISTS "${dest}/.ptqkit-unpacked")
    file(REMOVE_RECURSE "${dest}")
    if(ARGN)
      file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${dest}" PATTERNS ${ARGN})
    else()
      file(ARCHIVE_EXTRACT INPUT "${archive}" DESTINATION "${dest}")
    endif()
    file(TOUCH "${dest}/.ptqkit-unpacked")
  endif()
  set(${out_var} "${dest}" PARENT_SCOPE)
endfunction()

# Configures, builds and installs the CMake project in SOURCE into PREFIX with this build's
# compilers and generator, once per set of arguments (a stamp in PREFIX records them). Its log goes
# to <build>/_ptqkit_deps/<name>.log; a failure prints the log's end.
function(ptqkit_build_project name source prefix)
  set(args -G "${CMAKE_GENERATOR}" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_INSTALL_PREFIX=${prefix}"
      -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON
      "-DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
      # Neither the system's packages nor its package registry: only what is passed here.
      "-DCMAKE_IGNORE_PREFIX_PATH=/usr;/usr/local" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF ${ARGN})
  if(CMAKE_MAKE_PROGRAM)
    list(APPEND args "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}")
  endif()
  string(SHA256 key "${source};${args}")
  set(stamp "${prefix}/.ptqkit-built")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" built)
    if(built STREQUAL key)
      return()
    endif()
  endif()
  message(STATUS "ptqkit: building ${name} from source into ${prefix} (once per build folder)")
  file(REMOVE_RECURSE "${prefix}" "${ptqkit_deps}/build/${name}")
  set(log "${ptqkit_deps}/${name}.log")
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  foreach(step configure build install)
    if(step STREQUAL configure)
      set(command "${CMAKE_COMMAND}" -S "${source}" -B "${ptqkit_deps}/build/${name}" ${args})
    elseif(step STREQUAL build)
      set(command "${CMAKE_COMMAND}" --build "${ptqkit_deps}/build/${name}" --parallel ${cores})
    else()
      set(command "${CMAKE_COMMAND}" --install "${ptqkit_deps}/build/${name}")
    endif()
    execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    file(APPEND "${log}" "${out}")
    if(NOT rc EQUAL 0)
      string(LENGTH "${out}" length)
      math(EXPR from "${length} - 4000")
      if(from LESS 0)
        set(from 0)
      endif()
      string(SUBSTRING "${out}" ${from} -1 tail)
      message(FATAL_ERROR "ptqkit: the ${step} step of ${name} failed (log: ${log}):\n${tail}")
    endif()
  endforeach()
  file(WRITE "${stamp}" "${key}")
endfunction()

# --- protobuf (with protoc, which ONNX's build runs), static and position-independent ------------
ptqkit_download("${PTQKIT_PROTOBUF_URL}" ${PTQKIT_PROTOBUF_SHA256} archive)
ptqkit_unpack("${archive}" src)
set(protobuf_prefix "${ptqkit_deps}/protobuf")
ptqkit_build_project(protobuf "${src}/protobuf-3.21.12" "${protobuf_prefix}"
  -Dprotobuf_BUILD_TESTS=OFF -Dprotobuf_BUILD_SHARED_LIBS=OFF -Dprotobuf_WITH_ZLIB=OFF
  -Dprotobuf_BUILD_EXAMPLES=OFF)

# --- ONNX (protos, checker, shape inference, version converter) --------------------------------
ptqkit_download("${PTQKIT_ONNX_URL}" ${PTQKIT_ONNX_SHA256} archive)
ptqkit_unpack("${archive}" src)
set(onnx_prefix "${ptqkit_deps}/onnx")
ptqkit_build_project(onnx "${src}/onnx-1.23.2" "${onnx_prefix}"
  "-DProtobuf_PROTOC_EXECUTABLE=${protobuf_prefix}/bin/protoc" "-DCMAKE_PREFIX_PATH=${protobuf_prefix}"
  "-DPython3_EXECUTABLE=${Python3_EXECUTABLE}" -DONNX_USE_PROTOBUF_SHARED_LIBS=OFF -DONNX_ML=1
  -DONNX_NAMESPACE=onnx -DONNX_BUILD_TESTS=OFF -DBUILD_ONNX_PYTHON=OFF)
find_package(Protobuf REQUIRED CONFIG PATHS "${protobuf_prefix}" NO_DEFAULT_PATH)
find_package(ONNX 1.19 REQUIRED CONFIG PATHS "${onnx_prefix}" NO_DEFAULT_PATH)

# --- ONNX Runtime: the library from npm, the headers from Debian's .deb (an ar archive) -------------
ptqkit_download("${PTQKIT_ORT_LIBRARY_URL}" ${PTQKIT_ORT_LIBRARY_SHA256} archive)
set(ort_member "package/bin/napi-v6/linux/${ort_npm_arch}/libonnxruntime.so.1")
ptqkit_unpack("${archive}" ort_library "${ort_member}")
ptqkit_download("${PTQKIT_ORT_HEADERS_URL}" ${PTQKIT_ORT_HEADERS_SHA256} archive)
ptqkit_unpack("${archive}" ort_deb)
file(GLOB ort_data "${ort_deb}/data.tar.*")
ptqkit_unpack("${ort_data}" ort_headers "*usr/include/onnxruntime/*")
set(ONNXRUNTIME_ROOT "${ptqkit_deps}/onnxruntime")
file(COPY "${ort_headers}/usr/include/onnxruntime/" DESTINATION "${ONNXRUNTIME_ROOT}/include")
file(COPY "${ort_library}/${ort_member}" DESTINATION "${ONNXRUNTIME_ROOT}/lib")

# --- RE2, compiled here (its vendored copy has no build files of its own) ------------------------
ptqkit_download("${PTQKIT_RE2_URL}" ${PTQKIT_RE2_SHA256} archive)
ptqkit_unpack("${archive}" src)
set(re2_root "${src}/package/vendor")
set(re2_sources)
foreach(name bitmap256 bitstate compile dfa filtered_re2 mimics_pcre nfa onepass parse perl_groups
             prefilter prefilter_tree prog re2 regexp set simplify stringpiece tostring
             unicode_casefold unicode_groups)
  list(APPEND re2_sources "${re2_root}/re2/${name}.cc")
endforeach()
foreach(name rune strutil)
  list(APPEND re2_sources "${re2_root}/util/${name}.cc")
endforeach()
find_package(Threads REQUIRED)
add_library(ptqkit_re2 STATIC ${re2_sources})
target_include_directories(ptqkit_re2 SYSTEM PUBLIC "${re2_root}")
target_compile_options(ptqkit_re2 PRIVATE -w)  # not our code: its warnings are not ours to fix
target_link_libraries(ptqkit_re2 PUBLIC Threads::Threads)
set_target_properties(ptqkit_re2 PROPERTIES POSITION_INDEPENDENT_CODE ON)
set(PTQKIT_RE2 ptqkit_re2)

# --- zlib and minizip (the .npz reader), compiled here --------------------------------------------
ptqkit_download("${PTQKIT_ZLIB_URL}" ${PTQKIT_ZLIB_SHA256} archive)
ptqkit_unpack("${archive}" src)
set(zlib_root "${src}/zlib-1.2.13.dfsg")
set(zip_sources)
foreach(name adler32 compress crc32 deflate infback inffast inflate inftrees trees uncompr zutil)
  list(APPEND zip_sources "${zlib_root}/${name}.c")
endforeach()
foreach(name ioapi unzip zip)
  list(APPEND zip_sources "${zlib_root}/contrib/minizip/${name}.c")
endforeach()
add_library(ptqkit_minizip STATIC ${zip_sources})
# <minizip/unzip.h> as on Debian, and zlib.h beside it.
target_include_directories(ptqkit_minizip SYSTEM PUBLIC "${zlib_root}/contrib" "${zlib_root}")
target_compile_definitions(ptqkit_minizip PRIVATE HAVE_UNISTD_H)
target_compile_options(ptqkit_minizip PRIVATE -w)
set_target_properties(ptqkit_minizip PROPERTIES POSITION_INDEPENDENT_CODE ON)
set(PTQKIT_MINIZIP ptqkit_minizip)

# --- header-only: fmt, CLI11, nlohmann-json ------------------------------------------------------
ptqkit_download("${PTQKIT_FMT_URL}" ${PTQKIT_FMT_SHA256} archive)
ptqkit_unpack("${archive}" src)
add_library(ptqkit_fmt INTERFACE)
target_include_directories(ptqkit_fmt SYSTEM INTERFACE "${src}/fmtlib-9.1.0+ds1/include")
target_compile_definitions(ptqkit_fmt INTERFACE FMT_HEADER_ONLY=1)
set(PTQKIT_FMT ptqkit_fmt)
ptqkit_download("${PTQKIT_CLI11_URL}" ${PTQKIT_CLI11_SHA256} archive)
ptqkit_unpack("${archive}" src)
add_library(CLI11::CLI11 INTERFACE IMPORTED)
target_include_directories(CLI11::CLI11 SYSTEM INTERFACE "${src}/CLI11-2.1.2/include")
ptqkit_download("${PTQKIT_JSON_URL}" ${PTQKIT_JSON_SHA256} archive)
ptqkit_unpack("${archive}" src "json-3.11.2/single_include/*")
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE "${src}/json-3.11.2/single_include")
