# Runs one memtool command and checks its exit code, its stdout against a golden file and its
# stderr against a regular expression. Usage (cmake -P):
#   -DCOMMAND="memtool|report|file" (arguments separated by '|') -DEXPECT_RC=0 [-DGOLDEN=file] [-DSTDERR_REGEX=re]
#   [-DSTDOUT_REGEX=re] [-DUPDATE_GOLDEN=1] [-DWORKDIR=dir]
if(NOT DEFINED WORKDIR)
  set(WORKDIR ${CMAKE_CURRENT_LIST_DIR}/../..)
endif()
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} WORKING_DIRECTORY ${WORKDIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc STREQUAL "${EXPECT_RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${EXPECT_RC}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}':\n${err}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}':\n${out}")
endif()
if(DEFINED GOLDEN)
  if(UPDATE_GOLDEN)
    file(WRITE ${GOLDEN} "${out}")
  endif()
  file(READ ${GOLDEN} expected)
  if(NOT out STREQUAL expected)
    file(WRITE ${GOLDEN}.actual "${out}")
    message(FATAL_ERROR "stdout differs from ${GOLDEN} (actual output in ${GOLDEN}.actual):\n"
                        "diff -u ${GOLDEN} ${GOLDEN}.actual")
  endif()
endif()
