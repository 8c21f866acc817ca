# Sourced by check_format.sh and lint.sh: the clang tool of the version the tree is held to.
#   clang_tool NAME   prints NAME-14 or NAME when that is version 14; nothing (status 1) otherwise
clang_tool() {
  local candidate
  for candidate in "$1-14" "$1"; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" --version | grep -q 'version 14\.'; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}
