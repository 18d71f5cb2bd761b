# Writes the generated version header (src/common/version.h.in) with the source tree's current
# git commit. Run at configure time and again by the leap_version target at every build, so a
# `git pull && cmake --build build` does not stamp trajectories, eval reports and `leap
# --version` with the commit the build folder was configured at. configure_file rewrites the
# header only when its text changes, so an unchanged commit recompiles nothing.
# Inputs (-D): LEAP_SOURCE_DIR, LEAP_VERSION_HEADER, PROJECT_VERSION.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${LEAP_SOURCE_DIR}
                OUTPUT_VARIABLE LEAP_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT LEAP_GIT_COMMIT)
  set(LEAP_GIT_COMMIT "unknown")  # a source tarball: no git history to name
else()
  # Tracked files that differ from HEAD: the binary is not that commit's, say so.
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${LEAP_SOURCE_DIR}
                  OUTPUT_VARIABLE changed OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(changed)
    string(APPEND LEAP_GIT_COMMIT "-dirty")
  endif()
endif()
configure_file(${LEAP_SOURCE_DIR}/src/common/version.h.in ${LEAP_VERSION_HEADER} @ONLY)
