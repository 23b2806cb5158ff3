# kiln: `make` builds everything into build/, `make test` runs all tests (also under sanitizers
# and the fuzzers briefly), `make demo` compiles and runs ResNet-18. Each installs what it needs
# first (`make deps`: Debian packages, then the Python environment of scripts/python_env.sh).
# `make benchmark` times the model suite beside ONNX Runtime and OpenVINO (`make benchmark-shapes`:
# one library for every batch, sequence length or image size; `make benchmark-serving`: behind
# Triton); `make conformance` runs
# ONNX's node cases; `make soak` and `make fuzz` are the long forms of their parts of `make test`.
BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 20
FUZZ_TARGETS = fuzz_graph_json fuzz_params fuzz_module_blob fuzz_library_file fuzz_onnx_import fuzz_npz
CMAKE_FLAGS ?=

.PHONY: all deps build test test-unit test-asan test-tsan test-fuzz fuzz soak conformance demo benchmark benchmark-shapes \
  benchmark-serving clean

all: build

deps:
	@scripts/deps.sh
	@scripts/python_env.sh
	@scripts/triton_env.sh
	@scripts/ray_env.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DKILN_PYTHON=$$(scripts/python_env.sh --print-python) \
	  -DKILN_TRITON_PYTHON=$$(scripts/triton_env.sh --print-python) \
	  -DKILN_RAY_PYTHON=$$(scripts/ray_env.sh --print-python) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

test: test-unit test-asan test-tsan test-fuzz
	@echo "make test: all test stages passed"

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer, built without oneDNN
# (KILN_USE_DNNL=OFF), so that the tests of what such a build says run too.
test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DKILN_SANITIZE=address,undefined -DKILN_USE_DNNL=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE python

# The concurrency tests under ThreadSanitizer.
test-tsan: deps
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE=thread >/dev/null
	@cmake --build build-tsan -j $(JOBS) --target runtime_tests
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ./bin/runtime_tests --gtest_filter='*Concurren*:*Parallel*:*SharedParams*'

# Each fuzz target for FUZZ_SECONDS (`make fuzz` runs them for 10 minutes each).
test-fuzz: deps
	@cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_FUZZ=ON -DKILN_BUILD_TESTS=OFF \
	  -DKILN_PYTHON=$$(scripts/python_env.sh --print-python) >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target $(FUZZ_TARGETS)
	@for t in $(FUZZ_TARGETS); do \
	  mkdir -p build-fuzz/corpus/$$t && \
	  echo "fuzzing $$t for $(FUZZ_SECONDS) s" && \
	  ./build-fuzz/bin/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=0 build-fuzz/corpus/$$t \
	    $$(ls -d fuzz/seeds/$${t#fuzz_} build-fuzz/seeds/$${t#fuzz_} 2>/dev/null) \
	    2>build-fuzz/$$t.log || { tail -50 build-fuzz/$$t.log; exit 1; }; \
	done

fuzz:
	@$(MAKE) test-fuzz FUZZ_SECONDS=600

# The soak test at length: 100,000 runs (`make test` runs 3,000); then the Triton backend and
# kiln.serve on Ray Serve under 10,000 requests at concurrency 32, the servers' resident memory
# checked flat (`make test`: 2,000 at 16).
soak: build
	KILN_SOAK_RUNS=100000 $(BUILD)/bin/soak_test
	KILN_TRITON_LOAD=10000,32 KILN_BIN=$(BUILD)/bin/kiln KILN_BUILD_DIR=$(BUILD) \
	  $$(scripts/triton_env.sh --print-python) -m pytest -q -s -p no:cacheprovider \
	  tests/python/test_triton_backend.py -k under_load
	KILN_RAY_LOAD=10000,32 KILN_BIN=$(BUILD)/bin/kiln KILN_BUILD_DIR=$(BUILD) PYTHONPATH=$(BUILD)/python \
	  $$(scripts/ray_env.sh --print-python) -m pytest -q -s -p no:cacheprovider \
	  tests/python/test_ray_serve.py -k requests_under_load

# ONNX's backend node cases (ONNX 1.12's and the onnx wheel's), kiln and ONNX Runtime side by side;
# the report goes to $(BUILD)/conformance (CONFORMANCE_ARGS="--suite 1.12 --engines kiln").
conformance: build
	@$$(scripts/python_env.sh --print-python) scripts/conformance.py --kiln $(BUILD)/bin/kiln \
	  --report $(BUILD)/conformance $(CONFORMANCE_ARGS)

demo: build
	@$$(scripts/python_env.sh --print-python) scripts/demo.py --kiln $(BUILD)/bin/kiln

# kiln beside ONNX Runtime and OpenVINO on the model suite, each engine in its own process
# (scripts/benchmark.py; the peers from scripts/peers_env.sh; BENCHMARK_ARGS="--models resnet18").
benchmark: build
	@scripts/peers_env.sh
	@PYTHONPATH=$(BUILD)/python $$(scripts/python_env.sh --print-python) scripts/benchmark.py $(BENCHMARK_ARGS)

# One library for every shape beside a library per shape (scripts/benchmark_shapes.py), and serving:
# perf_analyzer on kiln's Triton backend beside ONNX Runtime in PyTriton (scripts/benchmark_serving.py).
benchmark-shapes: build
	@PYTHONPATH=$(BUILD)/python $$(scripts/python_env.sh --print-python) scripts/benchmark_shapes.py $(BENCHMARK_ARGS)

benchmark-serving: build
	@$$(scripts/triton_env.sh --print-python) scripts/benchmark_serving.py --kiln $(BUILD)/bin/kiln --build $(BUILD) \
	  $(BENCHMARK_ARGS)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
