# Sourced by the bench scripts: median_ms "$@" prints the median wall time in ms of `repeats`
# runs of the command (environment from the caller; output in $work/out and $work/err; a failed
# run stops the script with its stderr).
median_ms() {
  local times=()
  for _ in $(seq "$repeats"); do
    local start end
    start=$(date +%s%N)
    "$@" > "$work/out" 2> "$work/err" || { echo "failed: $*" >&2; tail -3 "$work/err" >&2; exit 1; }
    end=$(date +%s%N)
    times+=($(((end - start) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v digits="${median_digits:-1}" \
    '{a[NR]=$1} END {printf "%.*f", digits, a[int((NR+1)/2)] / 1000}'
}
