# The fuzz smoke run of one target, as a ctest entry (fuzz/SmokeTests.cmake):
#   cmake -DFUZZER=... -DSEEDS=dir -DREGRESSIONS=dir -DWORK=dir -DRUNS=N [-DDICT=file] -P SmokeRun.cmake
# Runs the seed corpus and the saved regressions once each, then mutates them from libFuzzer's
# seed 1 until RUNS executions in all. New inputs go to a fresh WORK folder, so every run
# starts from the same corpus (the seed corpus is never written).
if(NOT EXISTS "${FUZZER}")
  message("no fuzz build: ${FUZZER} does not exist; build it as docs/fuzzing.md says")
  return()
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/corpus")
set(corpora "${WORK}/corpus" "${SEEDS}")
if(IS_DIRECTORY "${REGRESSIONS}")
  list(APPEND corpora "${REGRESSIONS}")
endif()
set(options -seed=1 -runs=${RUNS} -timeout=120 -rss_limit_mb=2560 -print_final_stats=1
    -artifact_prefix=${WORK}/)
if(DICT)
  list(APPEND options -dict=${DICT})
endif()
execute_process(COMMAND "${FUZZER}" ${options} ${corpora} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed (${result}); the input is saved in ${WORK}/, "
                      "reproduce with: ${FUZZER} ${WORK}/crash-...")
endif()
