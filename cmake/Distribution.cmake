# What users outside the lab get: a Debian package, and the CI recipe.
#
# `cpack -G DEB` in a build directory: a Debian package of what
# `cmake --install` installs (bin/fplab, bin/fplab-ci.sh, the script the CI
# recipes call, the fplab Python package under lib/python3/dist-packages,
# and the lab's data under share/fplab), prefix /usr; dpkg-shlibdeps fills in the
# shared libraries the program and the module link. Two builds make one:
#   - the release preset: package `fplab`, the whole program (the lab's
#     commands, Open MPI, OpenBLAS) and the module with its model library,
#     so `import fplab.torch` works (python3-torch Recommended: fplab.torch
#     imports torch, the rest of the module does not);
#   - the lite preset (FPLAB_LITE, docs/ci.md): package `fplab-lite`, the
#     array and results commands and the module without fplab.torch, for
#     CI images; no MPI, model or torch. The two conflict (both ship
#     /usr/bin/fplab).
if(FPLAB_LITE)
  set(CPACK_PACKAGE_NAME fplab-lite)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS fplab)
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}: fplab diff/sum/round and the fplab Python module")
else()
  set(CPACK_PACKAGE_NAME fplab)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS fplab-lite)
  set(CPACK_DEBIAN_PACKAGE_RECOMMENDS python3-torch)
  set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
      "${PROJECT_DESCRIPTION}: the fplab program and the fplab Python module with fplab.torch")
endif()
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "fplab maintainers <fplab@example.invalid>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The module is built for this interpreter's ABI (python3.11 on Debian 12):
# FPLAB_PYTHON_VERSION is "3.11", FPLAB_PYTHON_NEXT_VERSION "3.12" (python/).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "python3 (>= ${FPLAB_PYTHON_VERSION}), python3 (<< ${FPLAB_PYTHON_NEXT_VERSION}), python3-numpy")
include(CPack)

# The CI recipes' script, on PATH beside fplab (examples/ci/, docs/ci.md).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/examples/ci/fplab-ci.sh DESTINATION bin)

# The lab's data under share/fplab, at their source-tree paths, where an
# installed program looks first (io/data_file.hpp): the bundled model and
# the experiments' fixture, so `fplab run all` and `fplab generate` work
# without a checkout. The lite build has no model and no experiments.
if(NOT FPLAB_LITE)
  install(FILES ${PROJECT_SOURCE_DIR}/model/data/kjv-char.safetensors DESTINATION share/fplab/model/data)
  install(FILES ${PROJECT_SOURCE_DIR}/experiments/data/a4_normals.npy DESTINATION share/fplab/experiments/data)
endif()

# The package as a user gets it: unpacked into a scratch root (dpkg -x),
# where `fplab diff` and `import fplab` must work, and `import fplab.torch`
# in the release build's package (packaging/check_deb.sh). Not in sanitizer
# builds, which build no module (python/).
if(FPLAB_BUILD_TESTS AND TARGET fplab_python)
  if(FPLAB_LITE)
    set(_fplab_deb_kind lite)
  else()
    set(_fplab_deb_kind full)
  endif()
  add_test(NAME deb_package
           COMMAND ${PROJECT_SOURCE_DIR}/packaging/check_deb.sh ${PROJECT_BINARY_DIR}
                   ${Python3_EXECUTABLE} ${_fplab_deb_kind})
  set_tests_properties(deb_package PROPERTIES TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=2)
endif()

# The CI recipe (examples/ci/, docs/ci.md): fplab-ci.sh, the script both
# example workflows call, run on examples/ci/project with its committed
# baseline: unchanged passes, planted drift is caught, refresh works.
if(FPLAB_BUILD_TESTS)
  add_test(NAME ci_recipe
           COMMAND ${PROJECT_SOURCE_DIR}/examples/ci/test_recipe.sh $<TARGET_FILE:fplab>
                   ${Python3_EXECUTABLE})
  set_tests_properties(ci_recipe PROPERTIES TIMEOUT 300)
endif()

# The two recipes' own commands (examples/ci/github/, examples/ci/gitlab/),
# read from the YAML and run against a local bare git remote: the label's
# run refreshes and pushes, a later push does not, a rejected push fails
# the job, a fork's read-only token does not (examples/ci/run_workflows.py).
if(FPLAB_BUILD_TESTS)
  add_test(NAME ci_workflows
           COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/examples/ci/run_workflows.py
                   $<TARGET_FILE:fplab> ${Python3_EXECUTABLE})
  set_tests_properties(ci_workflows PROPERTIES TIMEOUT 600)
endif()
