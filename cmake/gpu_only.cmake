# The GPU-only build (LEAP_GPU_ONLY=ON), included by the top-level CMakeLists.txt instead of the
# full build. It needs only the CUDA toolkit and fmt, so benchmarks/gpu_check.sh can build it on
# GPU machines without the Debian development packages. Each library is taken from the system
# when its package is installed, else from LEAP_GPU_DEPS (a folder that
# scripts/stage_gpu_deps.sh filled from a machine that has them: include/ and lib/), else from
# LEAP_EXTRA_INCLUDE (e.g. PyTorch's include folder, for fmt). It builds, in tiers:
#  - always: the CUDA backend and leap_gpu_check (device report, op parity against PyTorch,
#    cuBLASLt GEMM throughput, a one-rank NCCL communicator when NCCL is found);
#  - with nlohmann_json (Debian's or staged): the model library,
#    for the train-step and decode benchmarks;
#  - with Boost.program_options as well: the sandbox with its GPU executor (the executor check).
# Nothing here links MPI, HDF5, OpenBLAS or GoogleTest.
if(NOT LEAP_HAVE_CUDA)
  message(FATAL_ERROR "LEAP_GPU_ONLY=ON needs nvcc: put the CUDA toolkit's bin/ on PATH")
endif()
set(LEAP_GPU_DEPS "" CACHE PATH "Folder from scripts/stage_gpu_deps.sh (include/, lib/), used where a package is missing")
set(LEAP_EXTRA_INCLUDE "" CACHE PATH "Extra folder with fmt/ and nlohmann/ headers (e.g. PyTorch's include folder)")
# The staged folder first: its headers are the versions the full build is tested with.
set(LEAP_HEADER_HINTS "")
if(LEAP_GPU_DEPS)
  list(APPEND LEAP_HEADER_HINTS ${LEAP_GPU_DEPS}/include)
endif()
if(LEAP_EXTRA_INCLUDE)
  list(APPEND LEAP_HEADER_HINTS ${LEAP_EXTRA_INCLUDE})
endif()

find_package(fmt QUIET)
if(NOT fmt_FOUND)
  find_path(LEAP_FMT_INCLUDE fmt/format.h HINTS ${LEAP_HEADER_HINTS} NO_DEFAULT_PATH)
  if(NOT LEAP_FMT_INCLUDE)
    message(FATAL_ERROR "LEAP_GPU_ONLY: fmt not found: install libfmt-dev, or stage it with "
                        "scripts/stage_gpu_deps.sh DIR on a machine that has it and pass -DLEAP_GPU_DEPS=DIR")
  endif()
  add_library(leap_fmt_header_only INTERFACE)
  target_include_directories(leap_fmt_header_only SYSTEM INTERFACE ${LEAP_FMT_INCLUDE})
  target_compile_definitions(leap_fmt_header_only INTERFACE FMT_HEADER_ONLY=1)
  add_library(fmt::fmt ALIAS leap_fmt_header_only)
endif()
find_package(nlohmann_json 3.9 QUIET)
if(NOT nlohmann_json_FOUND)
  find_path(LEAP_JSON_INCLUDE nlohmann/json.hpp HINTS ${LEAP_HEADER_HINTS} NO_DEFAULT_PATH)
  if(LEAP_JSON_INCLUDE)
    add_library(leap_json_header_only INTERFACE)
    target_include_directories(leap_json_header_only SYSTEM INTERFACE ${LEAP_JSON_INCLUDE})
    add_library(nlohmann_json::nlohmann_json ALIAS leap_json_header_only)
    set(nlohmann_json_FOUND TRUE)
  endif()
endif()
find_package(Boost 1.71 QUIET COMPONENTS program_options)
if(NOT Boost_FOUND AND LEAP_GPU_DEPS AND EXISTS ${LEAP_GPU_DEPS}/lib/libboost_program_options.a
   AND EXISTS ${LEAP_GPU_DEPS}/include/boost/program_options.hpp)
  # The staged static library: nothing of Boost is needed at run time.
  add_library(Boost::program_options STATIC IMPORTED)
  set_target_properties(Boost::program_options PROPERTIES
    IMPORTED_LOCATION ${LEAP_GPU_DEPS}/lib/libboost_program_options.a
    INTERFACE_INCLUDE_DIRECTORIES ${LEAP_GPU_DEPS}/include)
  set(Boost_FOUND TRUE)
endif()
# The model library needs JSON (config.json); the sandbox also needs Boost (its option
# declarations are linked into the functions it uses). The benchmarks use the model only
# through Transformer, so they link without the option parser.
set(LEAP_GPU_MODEL_TIER OFF)
set(LEAP_GPU_SANDBOX_TIER OFF)
if(nlohmann_json_FOUND)
  set(LEAP_GPU_MODEL_TIER ON)
  if(Boost_FOUND)
    set(LEAP_GPU_SANDBOX_TIER ON)
  endif()
endif()
message(STATUS "LEAP_GPU_ONLY: NCCL ${LEAP_HAVE_NCCL}, model tier ${LEAP_GPU_MODEL_TIER} (needs "
               "nlohmann_json: '${nlohmann_json_FOUND}'), sandbox tier ${LEAP_GPU_SANDBOX_TIER} "
               "(also needs Boost.program_options: '${Boost_FOUND}')")

# common without MPI: the fatal reporter then just aborts. config.cpp needs Boost.
add_library(leap_common STATIC src/common/status.cpp src/common/check.cpp src/common/log.cpp
                               src/common/fs_util.cpp)
if(nlohmann_json_FOUND)
  target_link_libraries(leap_common PUBLIC nlohmann_json::nlohmann_json)
endif()
if(LEAP_GPU_SANDBOX_TIER)
  target_sources(leap_common PRIVATE src/common/config.cpp)
  target_link_libraries(leap_common PUBLIC Boost::program_options)
endif()
target_include_directories(leap_common PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}
                                              ${CMAKE_BINARY_DIR}/generated)
target_link_libraries(leap_common PUBLIC fmt::fmt PRIVATE leap_warnings)

# The op interface (backend.h, lr_schedule.h) and the host token rule that backend.h's default
# sample_rows calls: an unoptimised build emits that default in every backend's vtable. The CPU
# backend itself needs OpenBLAS, so it stays out.
add_library(leap_backend STATIC src/backend/token_select.cpp)
target_include_directories(leap_backend PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(leap_backend PUBLIC leap_common PRIVATE leap_warnings)

if(LEAP_GPU_MODEL_TIER)
  add_subdirectory(src/model)
endif()
if(LEAP_GPU_SANDBOX_TIER)
  add_subdirectory(src/tasks)
  add_subdirectory(src/sandbox)
endif()
add_subdirectory(cuda)
