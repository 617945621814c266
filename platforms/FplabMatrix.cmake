# FplabMatrix.cmake: build one program of yours for a platform-matrix entry
# and check its outputs with `fplab diff`. Copy this file (or include() it)
# into your project; docs/drift.md ("Track your own code") shows the loop
# that configures one build per toolchain and flag mode.
#
#   fplab_matrix_mode(<target> <strict|defaults> [EXTRA_FLAGS flags...])
#       strict:   ISO C++ (-std=c++20), -ffp-contract=off -fno-fast-math:
#                 the same bits on every IEEE platform except where the
#                 platform itself differs (x87 excess precision, libm).
#       defaults: what the compiler does when nobody asks: GNU mode
#                 (-std=gnu++20), GCC's default -ffp-contract=fast, so
#                 a*b+c becomes an FMA wherever the target has one.
#       EXTRA_FLAGS: the entry's own flags (-march=x86-64-v3, -mfpmath=sse, ...).
#
#   fplab_matrix_header_only(<target> [fmt] [nlohmann] [eigen])
#       Debian's header-only libraries for a cross build: their headers are
#       architecture independent, but a cross compiler does not search
#       /usr/include, so each is linked into a folder of its own (never all
#       of /usr/include: its glibc headers are the host's). fmt is used
#       header-only (FMT_HEADER_ONLY): there is no cross-built libfmt.
#
#   fplab_matrix_test(NAME <name> COMMAND <target> [args...]
#                     OUTPUT_DIR <dir> BASELINE_DIR <dir> FILES <file>...
#                     [DIFF_ARGS ...] [EXPECT_DRIFT])
#       ctest tests: <name>-run runs the program (through
#       CMAKE_CROSSCOMPILING_EMULATOR, e.g. qemu-aarch64, on a foreign
#       target); then for each file <name>-<file>-diff runs
#       `fplab diff BASELINE_DIR/<file> OUTPUT_DIR/<file> DIFF_ARGS`, which
#       fails when the output drifts beyond the tolerance. EXPECT_DRIFT
#       turns it into a negative control: it passes only if fplab reports
#       DRIFT (not on bad input). FPLAB is the host fplab program (cache
#       variable; default: found on PATH). Call enable_testing() first.
include_guard(GLOBAL)

set(FPLAB "" CACHE FILEPATH "The host fplab program, for fplab_matrix_test")
if(NOT FPLAB)
  find_program(FPLAB_FOUND fplab NO_CMAKE_FIND_ROOT_PATH)
  if(FPLAB_FOUND)
    set(FPLAB ${FPLAB_FOUND} CACHE FILEPATH "" FORCE)
  endif()
endif()

function(fplab_matrix_mode target mode)
  cmake_parse_arguments(ARG "" "" "EXTRA_FLAGS" ${ARGN})
  set_target_properties(${target} PROPERTIES CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON)
  if(mode STREQUAL "strict")
    set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
    target_compile_options(${target} PRIVATE -ffp-contract=off -fno-fast-math)
  elseif(mode STREQUAL "defaults")
    set_target_properties(${target} PROPERTIES CXX_EXTENSIONS ON)
  else()
    message(FATAL_ERROR "fplab_matrix_mode: mode '${mode}' is not strict or defaults")
  endif()
  if(ARG_EXTRA_FLAGS)
    target_compile_options(${target} PRIVATE ${ARG_EXTRA_FLAGS})
  endif()
endfunction()

function(fplab_matrix_header_only target)
  set(dir ${CMAKE_BINARY_DIR}/fplab-header-only)
  foreach(lib ${ARGN})
    if(lib STREQUAL "fmt")
      file(MAKE_DIRECTORY ${dir}/fmt)
      file(CREATE_LINK /usr/include/fmt ${dir}/fmt/fmt SYMBOLIC)
      target_include_directories(${target} SYSTEM PUBLIC ${dir}/fmt)
      target_compile_definitions(${target} PUBLIC FMT_HEADER_ONLY)
    elseif(lib STREQUAL "nlohmann")
      file(MAKE_DIRECTORY ${dir}/nlohmann)
      file(CREATE_LINK /usr/include/nlohmann ${dir}/nlohmann/nlohmann SYMBOLIC)
      target_include_directories(${target} SYSTEM PUBLIC ${dir}/nlohmann)
    elseif(lib STREQUAL "eigen")
      target_include_directories(${target} SYSTEM PUBLIC /usr/include/eigen3)
    else()
      message(FATAL_ERROR "fplab_matrix_header_only: unknown library '${lib}'")
    endif()
  endforeach()
endfunction()

function(fplab_matrix_test)
  cmake_parse_arguments(ARG "EXPECT_DRIFT" "NAME;OUTPUT_DIR;BASELINE_DIR" "COMMAND;FILES;DIFF_ARGS"
                        ${ARGN})
  if(NOT FPLAB)
    message(WARNING "fplab_matrix_test(${ARG_NAME}): no fplab program (set -DFPLAB=...); not added")
    return()
  endif()
  file(MAKE_DIRECTORY ${ARG_OUTPUT_DIR})
  add_test(NAME ${ARG_NAME}-run COMMAND ${ARG_COMMAND})
  set_tests_properties(${ARG_NAME}-run PROPERTIES FIXTURES_SETUP ${ARG_NAME})
  foreach(f ${ARG_FILES})
    add_test(NAME ${ARG_NAME}-${f}-diff
             COMMAND ${FPLAB} diff ${ARG_BASELINE_DIR}/${f} ${ARG_OUTPUT_DIR}/${f} ${ARG_DIFF_ARGS})
    set_tests_properties(${ARG_NAME}-${f}-diff PROPERTIES FIXTURES_REQUIRED ${ARG_NAME})
    if(ARG_EXPECT_DRIFT)
      set_tests_properties(${ARG_NAME}-${f}-diff PROPERTIES PASS_REGULAR_EXPRESSION "\nDRIFT: ")
    endif()
  endforeach()
endfunction()
