"""The `memtool` console script: replaces this Python process with the carried executable, so
signals, exit status and the terminal are the executable's own."""
import os
import sys

from memtool import EXECUTABLE


def main() -> None:
    try:
        os.execv(EXECUTABLE, ["memtool"] + sys.argv[1:])
    except OSError as error:
        sys.stderr.write(f"memtool: error: cannot run {EXECUTABLE}: {error.strerror}\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
