# The layering rule of shared/DESIGN.md, checked on every test run (ctest -R layering):
#   core <- dispatch <- ops <- backends (cpu/, cuda/)
# Generic code (ops, optim, nn, autograd, data, serialize, amp, profiler, distributed) never
# includes a backend's headers: what a second backend would need lives in a neutral layer
# (core/dtype_dispatch.h, ops/promotion.h, ops/reduce_utils.h), and work that touches memory
# is a dispatched op. core/ and dispatch/ include nothing above themselves.
# Usage: cmake -DSRC=<repo>/src -P check_layering.cmake
cmake_minimum_required(VERSION 3.22)
set(generic_dirs ops optim nn autograd data serialize amp profiler distributed models)
set(backend_pattern "#include[ \t]+\"(cpu|cuda)/")
set(low_dirs core dispatch)
set(above_pattern "#include[ \t]+\"(ops|cpu|cuda|nn|optim|autograd|data|serialize|amp|profiler)/")
set(violations "")
foreach(dir ${generic_dirs} ${low_dirs})
  if(dir IN_LIST low_dirs)
    set(pattern "${above_pattern}")
  else()
    set(pattern "${backend_pattern}")
  endif()
  file(GLOB_RECURSE files "${SRC}/${dir}/*.cpp" "${SRC}/${dir}/*.h" "${SRC}/${dir}/*.cu" "${SRC}/${dir}/*.cuh")
  foreach(f ${files})
    file(STRINGS "${f}" hits REGEX "${pattern}")
    foreach(h ${hits})
      file(RELATIVE_PATH rel "${SRC}" "${f}")
      string(STRIP "${h}" h)
      string(APPEND violations "  src/${rel}: ${h}\n")
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering: these includes point back up the layers "
                      "(core <- dispatch <- ops <- backends; see shared/DESIGN.md):\n${violations}")
endif()
message(STATUS "layering: ok")
