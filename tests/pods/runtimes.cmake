# One pod suite registered once per runtime (tests/pods, tests/turn, tests/grade):
#
#   include(${PROJECT_SOURCE_DIR}/tests/pods/runtimes.cmake)
#   hangar_pod_tests(NAME <base> SCRIPT <suite.sh> [RUNTIMES <runtime>...] [CURRENT | CURRENT_UNLESS_NODE]
#                    [ARGS <arg>...] [ENV <K=V>...] [CURRENT_ARGS <arg>...] [TIMEOUT <s>]
#                    [COST <s>] [OUTSIDE_CI <runtime>...])
#
# registers, for each runtime R of RUNTIMES (runsc: Debian's, crun, runc; node:
# the shared one-node cluster, below), the
# test <base>_R running `bash <suite.sh> <arg>... R`; with CURRENT and
# HANGAR_RUNSC_CURRENT set, also <base>_runsc_current running
# `bash <suite.sh> <arg>... runsc $HANGAR_RUNSC_CURRENT <current-arg>...`
# (the suites' "RUNTIME [RUNTIME_BIN [FLAG...]]" convention, tests/pods/podlib.sh).
# CURRENT without RUNTIMES: <base>_runsc_current alone (a suite only that
# runsc can run, such as checkpoint and restore).
# CURRENT_UNLESS_NODE: CURRENT only when the node suites are not registered
# (-DHANGAR_NODE_BIN), for a suite whose <base>_node skips nothing: the node
# (the same current runsc, through containerd's shim) takes its place.
# ENV: variables for the suite (through `cmake -E env`). TIMEOUT: 900 s unless given.
# COST: about how many seconds the suite takes (default 60): ctest starts the
# costliest tests first when it has no timings of its own yet (a clean
# build directory, as in CI), so the long pod suites do not start last and
# leave the run waiting on them alone (docs/ci.md).
#
# OUTSIDE_CI: these runtimes' variants also get the label "outside_ci", which
# the test command leaves out (scripts/test-all.sh; docs/ci.md, "The pod
# matrix in CI", says which and why); `ctest -L outside_ci` runs them.
#
# Every test gets the labels "pods" and its runtime ("runsc", "crun", "runc",
# "runsc_current"; ctest -L is a regular expression: -L '^runsc$' for Debian's
# runsc alone). Each suite has a pod (a podrun directory) in its own T_TMP
# and nothing fixed on the host, so any of them run side by side (ctest -j;
# docs/ci.md).
#
# Runtime "node": the suite's pod goes through the API server and the kubelet
# of the node suites' shared one-node cluster (tests/node/nodepod instead of
# podrun: RuntimeClass gvisor, exec through kubectl exec), registered only
# with -DHANGAR_NODE_BIN; the test <base>_node has the label "node" alone (the
# node lane, not the pods one), requires the ctest fixture "node"
# (tests/node/CMakeLists.txt) and finds the node through HANGAR_TEST_NODE_DIR.
include_guard(GLOBAL)

# hangar_node_fixture_dir(VAR): where the node fixture runs the shared node
# (one per build directory, so two builds' node lanes never share a node).
function(hangar_node_fixture_dir var)
  set(${var} "${CMAKE_BINARY_DIR}/node-shared" PARENT_SCOPE)
endfunction()

set(HANGAR_RUNSC_CURRENT "" CACHE FILEPATH
    "A current runsc for the *_runsc_current pod tests (tests/pods/build-runsc.sh prints its path)")

function(hangar_pod_tests)
  cmake_parse_arguments(PARSE_ARGV 0 P "CURRENT;CURRENT_UNLESS_NODE" "NAME;SCRIPT;TIMEOUT;COST"
                        "RUNTIMES;ARGS;ENV;CURRENT_ARGS;OUTSIDE_CI")
  # RUNTIMES may be left out with CURRENT: a suite for the current runsc only.
  if(NOT P_NAME OR NOT P_SCRIPT OR (NOT P_RUNTIMES AND NOT P_CURRENT))
    message(FATAL_ERROR "hangar_pod_tests: NAME, SCRIPT and RUNTIMES (or CURRENT) are required")
  endif()
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "hangar_pod_tests(${P_NAME}): unknown arguments ${P_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT P_TIMEOUT)
    set(P_TIMEOUT 900)
  endif()
  if(NOT P_COST)
    set(P_COST 60)
  endif()
  set(prefix bash)
  if(P_ENV)
    set(prefix ${CMAKE_COMMAND} -E env ${P_ENV} bash)
  endif()
  set(variants ${P_RUNTIMES})
  if(P_CURRENT_UNLESS_NODE AND NOT HANGAR_NODE_BIN)
    set(P_CURRENT TRUE)
  endif()
  if(P_CURRENT AND HANGAR_RUNSC_CURRENT)
    list(APPEND variants runsc_current)
  endif()
  foreach(v ${variants})
    if(v STREQUAL "node" AND NOT HANGAR_NODE_BIN)
      continue()
    endif()
    if(v STREQUAL "runsc_current")
      set(rt_args runsc ${HANGAR_RUNSC_CURRENT} ${P_CURRENT_ARGS})
    elseif(v MATCHES "^(runsc|crun|runc|node)$")
      set(rt_args ${v})
    else()
      message(FATAL_ERROR "hangar_pod_tests(${P_NAME}): unknown runtime ${v} (runsc, crun, runc, node)")
    endif()
    # Through EVAL, each argument bracket-quoted: an empty one (an unset
    # HANGAR_TOOLS_BIN) stays an argument, which ${P_ARGS} would drop.
    set(cmd "")
    foreach(a IN LISTS prefix P_SCRIPT P_ARGS rt_args)
      string(APPEND cmd " [==[${a}]==]")
    endforeach()
    cmake_language(EVAL CODE "add_test(NAME ${P_NAME}_${v} COMMAND ${cmd})")
    if(v STREQUAL "node")
      hangar_node_fixture_dir(node_dir)
      set_tests_properties(${P_NAME}_${v} PROPERTIES LABELS "node" TIMEOUT ${P_TIMEOUT} COST ${P_COST}
                           FIXTURES_REQUIRED node ENVIRONMENT "HANGAR_TEST_NODE_DIR=${node_dir}")
    else()
      set(labels "pods;${v}")
      if(v IN_LIST P_OUTSIDE_CI)
        list(APPEND labels outside_ci)
      endif()
      set_tests_properties(${P_NAME}_${v} PROPERTIES LABELS "${labels}" TIMEOUT ${P_TIMEOUT}
                           COST ${P_COST})
    endif()
  endforeach()
endfunction()

