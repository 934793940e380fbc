# The two README commands, `make shell` and `make test`, plus `make bench`,
# `make bench-gpu`, `make gpu-bundle` and `make fuzz` (FUZZ_SECONDS per harness, default 600).
# Each installs missing Debian packages, configures once, and builds
# incrementally. BUILD and CMAKE_FLAGS may be overridden:
#   make test BUILD=build-asan CMAKE_FLAGS=-DTESSERA_SANITIZE=address

BUILD ?= build
CMAKE_FLAGS ?=
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 600

.PHONY: shell test bench bench-gpu gpu-bundle fuzz deps configure build test-asan test-tsan format clean

shell: build
	@$(BUILD)/tessera

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench: deps configure
	@bash cmake/install-deps.sh --bench
	cmake --build $(BUILD) -j $(JOBS) --target benchmarks
	@for b in $(BUILD)/tests/*_bench; do \
	  case $$b in */conv_bench|*/image_pipeline_bench|*/rnn_bench|*/linalg_bench) ;; *) $$b || exit 1 ;; esac; done
	@bash scripts/bench/conv_vs_torch.sh $(BUILD)
	@bash scripts/bench/lstm_vs_torch.sh $(BUILD)
	@bash scripts/bench/linalg_vs_torch.sh $(BUILD)
	@$(BUILD)/tessera scripts/bench/bucketing_memory.lua
	@bash scripts/bench/lua_vs_peers.sh $(BUILD)/tessera
	@bash scripts/bench/train_vs_torch.sh $(BUILD)/tessera
	@bash scripts/bench/gluon_vs_torch.sh $(BUILD)/tessera
	@bash scripts/bench/runahead.sh $(BUILD)/tessera
	@bash scripts/bench/allreduce_vs_mpi.sh $(BUILD)/tessera
	@bash scripts/bench/dist_step.sh $(BUILD)/tessera
	@bash scripts/bench/check_numerics_cost.sh $(BUILD)/tessera
	@bash scripts/bench/image_iter_vs_torch.sh $(BUILD)/tessera
	@bash scripts/bench/lenet_epoch_records.sh $(BUILD)/tessera
	@TESSERA_OMP_THREADS=1 $(BUILD)/tessera scripts/bench/custom_ops.lua 1000000 \
	  $$(ls $(BUILD)/tests/plugin/libtessera_example_ops.so 2>/dev/null)

# The GPU benchmarks (each says so and exits 0 without a GPU).
bench-gpu: build
	@for b in $(BUILD)/tests/gpu_*_bench; do $$b || exit 1; done
	@bash scripts/bench/gpu_train_vs_torch.sh $(BUILD)/tessera
	@bash scripts/bench/gpu_lstm_vs_torch.sh $(BUILD)/tessera
	@bash scripts/bench/gpu_conv_vs_torch.sh $(BUILD)/tessera

# The GPU suite in one folder (and .tar.gz) for a machine that has a GPU but
# none of the Debian packages: copy it there and run gpu-bundle/run.sh.
gpu-bundle: build
	bash tools/gpu_bundle/pack.sh $(BUILD) $(BUILD)/gpu-bundle

fuzz: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target fuzzers
	bash tests/fuzz/run.sh --seconds $(FUZZ_SECONDS) --jobs $(JOBS) $(BUILD)/fuzz

deps:
	@bash cmake/install-deps.sh

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS=-DTESSERA_SANITIZE=address

test-tsan:
	$(MAKE) test BUILD=build-tsan CMAKE_FLAGS=-DTESSERA_SANITIZE=thread

format:
	clang-format -i $$(git ls-files '*.cc' '*.h' '*.cu')

clean:
	rm -rf $(BUILD)
