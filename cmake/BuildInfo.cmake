# Stamps results files with what produced them (as xsum does): fplab version,
# compiler, the flags that affect floating point. The git commit is read at
# run time by the program (it can change without a rebuild).
string(TOUPPER "${CMAKE_BUILD_TYPE}" _fplab_build_type)
set(FPLAB_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${_fplab_build_type}} -ffp-contract=off -fno-fast-math")
string(STRIP "${FPLAB_CXX_FLAGS}" FPLAB_CXX_FLAGS)
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_info.hpp.in ${PROJECT_BINARY_DIR}/generated/build_info.hpp @ONLY)
