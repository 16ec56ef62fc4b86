# The fuzz smoke run, as ctest entries of the main build (included by tests/CMakeLists.txt):
# fuzz_smoke.NAME runs the fuzz target NAME of the clang fuzz build in OVFIX_FUZZ_BUILD_DIR
# (fuzz/SmokeRun.cmake). Each is skipped when that build does not exist, so the main build
# needs no clang. scripts/test.sh builds it first; docs/fuzzing.md has the cost.
set(OVFIX_FUZZ_BUILD_DIR "${PROJECT_SOURCE_DIR}/build-fuzz" CACHE PATH
    "The -DOVFIX_FUZZ=ON build whose targets the fuzz smoke run runs")

# NAME=RUNS: executions in all, seeds included (a few seconds each on a CI machine).
set(OVFIX_FUZZ_SMOKE_RUNS load_model=3000 tensor_file=6000 text_form=4000 rule_file=1500
    convert=1500)
foreach(entry ${OVFIX_FUZZ_SMOKE_RUNS})
  string(REPLACE "=" ";" entry "${entry}")
  list(GET entry 0 name)
  list(GET entry 1 runs)
  set(dict "")
  if(name STREQUAL "rule_file")
    set(dict ${PROJECT_SOURCE_DIR}/fuzz/rule_file.dict)
  elseif(name STREQUAL "text_form" OR name STREQUAL "convert")
    set(dict ${PROJECT_SOURCE_DIR}/fuzz/onnx_text.dict)
  endif()
  add_test(NAME fuzz_smoke.${name}
    COMMAND ${CMAKE_COMMAND} -DFUZZER=${OVFIX_FUZZ_BUILD_DIR}/fuzz/ovfix_fuzz_${name}
            -DSEEDS=${OVFIX_FUZZ_BUILD_DIR}/fuzz/seeds/smoke/${name}
            -DREGRESSIONS=${PROJECT_SOURCE_DIR}/fuzz/regressions/${name}
            -DWORK=${CMAKE_CURRENT_BINARY_DIR}/fuzz_smoke/${name} -DRUNS=${runs} -DDICT=${dict}
            -P ${PROJECT_SOURCE_DIR}/fuzz/SmokeRun.cmake)
  set_tests_properties(fuzz_smoke.${name} PROPERTIES LABELS fuzz TIMEOUT 600
    SKIP_REGULAR_EXPRESSION "no fuzz build")
endforeach()
