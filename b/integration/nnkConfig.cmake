# nnkConfig.cmake - CMake package of nnk (find_package(nnk)).
# Defines the imported targets nnk::nnkc (the compiler) and nnk::runtime
# (libnnk), and the function
#
#   nnk_add_kernels(TARGET SOURCES a.nnk ... [HEADER_DIR dir]
#                   [CUDA_ARCHS sm_80 ...] [NO_CUDA] [TYPES f32 f16] [OPTIONS ...])
#
# which compiles each .nnk into an object linked into TARGET and a header
# in HEADER_DIR (default: the current binary directory), with depfiles so
# that editing an imported .nnk rebuilds exactly what uses it.

cmake_minimum_required(VERSION 3.20)

if(NOT TARGET nnk::nnkc)
  add_executable(nnk::nnkc IMPORTED)
  set_target_properties(nnk::nnkc PROPERTIES IMPORTED_LOCATION "/usr/local/bin/nnkc")
endif()
if(NOT TARGET nnk::runtime)
  add_library(nnk::runtime SHARED IMPORTED)
  set_target_properties(nnk::runtime PROPERTIES
    IMPORTED_LOCATION "/usr/local/lib/libnnk.so"
    INTERFACE_INCLUDE_DIRECTORIES "/usr/local/include")
endif()
set(NNK_NNKC "/usr/local/bin/nnkc")
set(NNK_VERSION "0.1.0")

function(nnk_add_kernels target)
  cmake_parse_arguments(NNK "NO_CUDA" "HEADER_DIR" "SOURCES;CUDA_ARCHS;TYPES;OPTIONS" ${ARGN})
  if(NOT NNK_SOURCES)
    message(FATAL_ERROR "nnk_add_kernels(${target}): no SOURCES")
  endif()
  if(NOT NNK_HEADER_DIR)
    set(NNK_HEADER_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  endif()
  set(_flags ${NNK_OPTIONS})
  if(NNK_NO_CUDA)
    list(APPEND _flags --no-cuda)
  elseif(NNK_CUDA_ARCHS)
    list(JOIN NNK_CUDA_ARCHS "," _archs)
    list(APPEND _flags "--cuda-arch=${_archs}")
  endif()
  if(NNK_TYPES)
    list(JOIN NNK_TYPES "," _types)
    list(APPEND _flags "-T${_types}")
  endif()
  file(MAKE_DIRECTORY "${NNK_HEADER_DIR}")
  foreach(_src IN LISTS NNK_SOURCES)
    get_filename_component(_abs "${_src}" ABSOLUTE)
    get_filename_component(_dir "${_abs}" DIRECTORY)
    get_filename_component(_name "${_src}" NAME_WE)
    set(_obj "${CMAKE_CURRENT_BINARY_DIR}/${_name}.nnk.o")
    set(_hdr "${NNK_HEADER_DIR}/${_name}.h")
    add_custom_command(
      OUTPUT "${_obj}" "${_hdr}"
      COMMAND nnk::nnkc -c ${_flags} -I "${_dir}" -MD -MF "${_obj}.d" -MQ "${_obj}"
              -o "${_obj}" -H "${_hdr}" "${_abs}"
      DEPENDS "${_abs}" nnk::nnkc
      DEPFILE "${_obj}.d"
      COMMENT "NNKC ${_src}"
      VERBATIM)
    set_source_files_properties("${_obj}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE "${_obj}" "${_hdr}")
  endforeach()
  target_include_directories(${target} PRIVATE "${NNK_HEADER_DIR}")
endfunction()
