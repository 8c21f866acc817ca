#!/bin/bash
# Streams that are not an input memtool reads (issue 39, item 1): /dev/zero, /dev/urandom and an
# endless pipe of zeros are refused at byte 0 after their first bytes, by every verb that reads
# an input, within a few seconds and a small address space (reading them whole needs gigabytes).
# Usage: stream_inputs.sh MEMTOOL
set -u
memtool=$1
fail=0
check() {  # check DESCRIPTION COMMAND...: exit 2 and one "at byte 0: unrecognised input" line
  local what=$1
  shift
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne 2 || ! $err =~ ^memtool:\ error:\ [^$'\n']*:\ at\ byte\ 0:\ (unrecognised\ input|not\ a\ memtool\ trace) ]]; then
    echo "FAIL: $what: exit $rc: $err"
    fail=1
  else
    echo "ok: $what"
  fi
}
# The address space a refused input needs is the binary and its head; reading 1 GiB would not fit.
limit_kib=$((1024 * 1024))
if [[ -z ${ASAN_OPTIONS-} ]]; then ulimit -v $limit_kib; fi
for verb in report plan "export --format perfetto --no-plan -o /dev/null" "export --format memory-viz -o /dev/null" simulate; do
  for device in /dev/zero /dev/urandom; do
    check "$verb $device" timeout 20 $memtool $verb $device
  done
  check "$verb endless pipe of zeros" timeout 20 bash -c "cat /dev/zero | $memtool $verb /dev/stdin"
  # A JSON object that goes on with NUL bytes is not JSON either.
  check "$verb '{' then zeros" timeout 20 bash -c "(printf '{\"segments\": ['; cat /dev/zero) | $memtool $verb /dev/stdin"
  # A pickle with a protocol PyTorch never writes.
  check "$verb 0x80 0xff then zeros" timeout 20 bash -c "(printf '\\x80\\xff'; cat /dev/zero) | $memtool $verb /dev/stdin"
done
exit $fail
