# Run by `cmake --install` after the fplab package is installed: says
# whether the interpreter the module was built for finds it there, and if
# not, what makes it. Debian's python3 searches /usr/lib/python3/dist-packages
# and /usr/local/lib/python3.X/dist-packages, not
# /usr/local/lib/python3/dist-packages; a venv searches its own
# site-packages only. Silent under DESTDIR (cpack, staged installs).
# Input: FPLAB_PY (the interpreter), FPLAB_PY_DIR (the install directory,
# relative to CMAKE_INSTALL_PREFIX or absolute).
if(NOT "$ENV{DESTDIR}" STREQUAL "")
  return()
endif()
if(IS_ABSOLUTE "${FPLAB_PY_DIR}")
  set(_dir "${FPLAB_PY_DIR}")
else()
  set(_dir "${CMAKE_INSTALL_PREFIX}/${FPLAB_PY_DIR}")
endif()
get_filename_component(_venv "${_dir}/../../.." ABSOLUTE)
if(EXISTS "${_venv}/pyvenv.cfg")  # <venv>/lib/python3.X/site-packages
  message(STATUS "fplab: the module is in the venv ${_venv} (its python finds it; it needs numpy "
                 "there too: ${_venv}/bin/pip install numpy, or a venv made with --system-site-packages)")
  return()
endif()
execute_process(COMMAND "${FPLAB_PY}" -c "import os, sys; d = os.path.realpath(sys.argv[1]); print(any(os.path.realpath(p) == d for p in sys.path))" "${_dir}"
                OUTPUT_VARIABLE _found OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
if(_rc EQUAL 0 AND _found STREQUAL "True")
  message(STATUS "fplab: ${FPLAB_PY} finds the module in ${_dir}")
else()
  message(WARNING "fplab: the module went to ${_dir}, which ${FPLAB_PY} does not search: "
                  "install with --prefix /usr (Debian's python3), or configure with "
                  "-DFPLAB_PYTHON_INSTALL_DIR=<your venv's site-packages>, or set PYTHONPATH=${_dir}")
endif()
