# The two Quick start commands (README.md):
#   make demo   set up, build, report on a real PyTorch trace, record + report + plan a CUDA program
#   make test   set up, build, and run the whole test suite (formatting, clang-tidy,
#               ThreadSanitizer, ASan/UBSan and short fuzzing runs included: what CI runs)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all setup configure build demo test format format-check lint tsan asan fuzz-smoke gpu-kit bench clean

all: build

setup:
	@bash scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo.sh $(BUILD)

test: build
	@bash scripts/check_format.sh
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory tsan
	@$(MAKE) --no-print-directory asan
	@$(MAKE) --no-print-directory fuzz-smoke

# The sources against .clang-format (clang-format 14): format-check reports, format rewrites.
format-check: setup
	@bash scripts/check_format.sh

format: setup
	@bash scripts/check_format.sh --fix

# clang-tidy (checks in .clang-tidy) over memtool's own sources as $(BUILD) compiles them.
lint: configure
	JOBS=$(JOBS) bash scripts/lint.sh $(BUILD)

# The concurrent tests again under ThreadSanitizer, in a build folder of their own: the
# recorder's 8-thread stress test and detection worker, and an 8-thread client through a
# TSan-built libmemtool.so on a TSan-built fakecuda (about 1.5 minutes).
tsan: setup
	JOBS=$(JOBS) bash tests/integration/run_tsan.sh $(abspath $(BUILD))-tsan

# The command-line tests again with memtool, libmemtool.so and the programs they run built with
# AddressSanitizer and UndefinedBehaviorSanitizer, in build-asan/.
asan: setup
	JOBS=$(JOBS) bash tests/cli/run_asan.sh $(abspath $(BUILD))-asan

# Each reader's libFuzzer target for 30 s from its seeds and regression files (clang, build-fuzz/).
fuzz-smoke: setup
	JOBS=$(JOBS) bash scripts/fuzz.sh 30

# What tests/gpu/run.sh needs, stripped, in out/gpu-kit/ (small enough to carry to a GPU machine).
gpu-kit: build
	@bash scripts/gpu_kit.sh $(BUILD) out/gpu-kit

bench: configure
	@cmake --build $(BUILD) -j $(JOBS) --target memtool_benchmarks
	bash bench/run.sh $(BUILD)

clean:
	rm -rf $(BUILD)
