"""`python -m memtool ...` runs the memtool command."""
from memtool._cli import main

main()
