# Sanitizer builds (scripts/sanitize.sh): LEAP_SANITIZE=address builds every C and C++ file with
# AddressSanitizer and UndefinedBehaviorSanitizer, LEAP_SANITIZE=thread with ThreadSanitizer.
# CUDA files keep nvcc's host compiler flags (nvcc cannot instrument device code, and the host
# launchers only pass pointers through); they are linked into instrumented programs as usual.
# A UBSan finding is an error (-fno-sanitize-recover): the test that hits it fails.
#
# What a sanitizer build relaxes, and where (README, "Sanitizers"):
#  - ASan reserves terabytes of shadow address space, so a worker under ASan sets no RLIMIT_AS
#    (sandbox/worker_main.cpp reads kAddressSanitizer from common/sanitizers.h); the other limits
#    stay;
#  - LeakSanitizer stops the process with ptrace to walk its threads: containers must allow
#    ptrace (scripts/sanitize.sh turns leak checking off, with a line saying so, where it cannot);
#  - Open MPI and libgomp are not built with TSan: tests/sanitizers/tsan.supp names their frames.
set(LEAP_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan + UBSan), thread (TSan), or empty")
set_property(CACHE LEAP_SANITIZE PROPERTY STRINGS "" address thread)

if(LEAP_SANITIZE STREQUAL "address")
  set(LEAP_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined)
elseif(LEAP_SANITIZE STREQUAL "thread")
  set(LEAP_SANITIZE_FLAGS -fsanitize=thread)
elseif(LEAP_SANITIZE)
  message(FATAL_ERROR "LEAP_SANITIZE=${LEAP_SANITIZE}: use address, thread, or leave it empty")
endif()

if(LEAP_SANITIZE_FLAGS)
  list(APPEND LEAP_SANITIZE_FLAGS -fno-omit-frame-pointer)
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${LEAP_SANITIZE_FLAGS}>")
  # Programs are linked by the C++ driver, which brings the sanitizer's runtime.
  add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${LEAP_SANITIZE_FLAGS}>")
  message(STATUS "LEAP: sanitizer build (${LEAP_SANITIZE}): ${LEAP_SANITIZE_FLAGS}")
endif()
