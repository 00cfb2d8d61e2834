# PaxFlow build. `make` builds everything under build/; `make test` runs
# every suite; `make demo` runs the main job (README). Missing Debian
# packages are installed first (tools/ensure-deps.sh).

BUILD    ?= build
CXX      ?= g++
OPT      ?= -O2
# Line tables only (-g1): stacks, perf and sanitizer reports keep their
# functions and lines, and a fresh build takes about a third less time than
# with full debug info (make CXXFLAGS='-O2 -g' for a debugger's variables).
CXXFLAGS ?= $(OPT) -g1
CXXFLAGS += -std=c++17 -Wall -Wextra -Wno-unused-parameter -pthread -MMD -MP
CPPFLAGS += -I. -Isrc_calvin -I$(BUILD)/gen
LDLIBS   := -lzmq -lprotobuf -lglog -lgflags -lraft -luv -pthread

PROTOS      := $(wildcard src_calvin/proto/*.proto)
PROTO_CC    := $(patsubst src_calvin/proto/%.proto,$(BUILD)/gen/%.pb.cc,$(PROTOS))
PROTO_H     := $(PROTO_CC:.cc=.h)
LIB_SRCS    := $(filter-out %_main.cc,$(wildcard src_calvin/*/*.cc))
LIB_OBJS    := $(patsubst %.cc,$(BUILD)/obj/%.o,$(LIB_SRCS)) \
               $(patsubst $(BUILD)/gen/%.cc,$(BUILD)/obj/gen/%.o,$(PROTO_CC))
LIB         := $(BUILD)/libpaxflow.a

TEST_SRCS   := $(wildcard tests/*.cc)
TEST_LIB_SRCS := $(filter-out %_test.cc,$(TEST_SRCS))
CLUSTER_TESTS := $(wildcard tests/*cluster*_test.cc)
UNIT_TESTS  := $(filter-out $(CLUSTER_TESTS),$(filter %_test.cc,$(TEST_SRCS)))
BENCH_SRCS  := $(wildcard bench/*_bench.cc)

# ThreadSanitizer build of the concurrency suites: the store under readers,
# writers and collectors, and the in-process engine (no zmq: its threads are
# not instrumented). Only the engine's folders are built for it (the node,
# client and network code is not under test there), with line tables only
# (-g1: what a race report's stacks need), which keeps a fresh build short.
TSAN_CXXFLAGS := -O1 -g1 -fsanitize=thread -std=c++17 -pthread -MMD -MP -Wall -Wextra -Wno-unused-parameter
TSAN_LIB_DIRS := applications backend base checkpoint common partition scheduler sequencer
TSAN_LIB_SRCS := $(filter $(patsubst %,src_calvin/%/%,$(TSAN_LIB_DIRS)),$(LIB_SRCS))
TSAN_TEST_SRCS := tests/store_concurrency_test.cc tests/engine_test.cc tests/engine_harness.cc \
                  tests/ltx_threads_test.cc tests/epoch_disposer_test.cc \
                  tests/serial_reference.cc tests/test_basics.cc
TSAN_OBJS := $(patsubst %.cc,$(BUILD)/tsan/%.o,$(TSAN_LIB_SRCS) $(TSAN_TEST_SRCS)) \
             $(patsubst $(BUILD)/gen/%.cc,$(BUILD)/tsan/gen/%.o,$(PROTO_CC))

BINS := $(BUILD)/bin/paxflow-node $(BUILD)/bin/paxflow-cluster $(BUILD)/bin/paxflow-bench \
        $(BUILD)/bin/paxflow-cli $(BUILD)/bin/paxflow-load
TEST_BINS := $(BUILD)/bin/unit_tests $(BUILD)/bin/cluster_tests $(BUILD)/bin/replication_member
BENCH_BINS := $(BUILD)/bin/micro_bench

# libFuzzer target for the client request path (clang, from Debian).
FUZZ_SRCS := tests/fuzz/request_fuzzer.cc src_calvin/client/request.cc src_calvin/client/reply.cc \
             $(wildcard src_calvin/applications/*.cc) src_calvin/common/hash.cc \
             src_calvin/common/types.cc $(BUILD)/gen/txn.pb.cc $(BUILD)/gen/client.pb.cc
FUZZ_FLAGS := -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
# One object per source, so that `make -j` compiles them side by side (as
# one clang command they took 96 s on one core at the end of the build).
FUZZ_OBJS := $(patsubst %.cc,$(BUILD)/fuzz/%.o,$(patsubst $(BUILD)/gen/%,gen/%,$(FUZZ_SRCS)))

.PHONY: all deps test soak tsan fuzz bench demo demo-tpcc clean
all: $(BINS) $(TEST_BINS) $(BENCH_BINS)

deps:
	@tools/ensure-deps.sh

# The generated sources are kept after the build: make would otherwise take
# them for intermediate files of the pattern rule and delete them, and the
# next make would generate them again and recompile everything that includes
# them (a second full build for `make test` after `make demo`).
.SECONDARY: $(PROTO_CC) $(PROTO_H)
$(BUILD)/gen/%.pb.cc $(BUILD)/gen/%.pb.h: src_calvin/proto/%.proto | deps
	@mkdir -p $(BUILD)/gen
	protoc --proto_path=src_calvin/proto --cpp_out=$(BUILD)/gen $<

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/bin/paxflow-node: $(BUILD)/obj/src_calvin/node/node_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/paxflow-cluster: $(BUILD)/obj/src_calvin/cluster/cluster_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/paxflow-bench: $(BUILD)/obj/src_calvin/report/bench_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/paxflow-cli: $(BUILD)/obj/src_calvin/client/cli_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/paxflow-load: $(BUILD)/obj/src_calvin/client/load_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

TEST_LIB_OBJS := $(patsubst %.cc,$(BUILD)/obj/%.o,$(TEST_LIB_SRCS))

# The test cases themselves at -O1: they drive the engine (built -O2 above)
# and check its results, and at -O1 they compile in about a quarter less
# time (a third of the build is test code). The shared helpers (the serial
# oracle, the harnesses) stay -O2: the suites run them on every result.
$(BUILD)/obj/tests/%_test.o: OPT := -O1

$(BUILD)/bin/unit_tests: $(patsubst %.cc,$(BUILD)/obj/%.o,$(UNIT_TESTS)) $(TEST_LIB_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ -lgtest -lgtest_main $(LDLIBS)

# One replicated-log member per process, for the tests that SIGKILL them.
$(BUILD)/bin/replication_member: $(BUILD)/obj/tests/replication_member/member_main.o $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ $(LDLIBS)

$(BUILD)/bin/cluster_tests: $(patsubst %.cc,$(BUILD)/obj/%.o,$(CLUSTER_TESTS)) $(TEST_LIB_OBJS) $(LIB) | $(BINS) $(BUILD)/bin/replication_member
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $(filter %.o %.a,$^) -o $@ -lgtest -lgtest_main $(LDLIBS)

$(BUILD)/bin/micro_bench: $(patsubst %.cc,$(BUILD)/obj/%.o,$(BENCH_SRCS)) $(LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CXXFLAGS) $^ -o $@ -lbenchmark -lbenchmark_main $(LDLIBS)

$(BUILD)/tsan/gen/%.o: $(BUILD)/gen/%.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(TSAN_CXXFLAGS) -c $< -o $@

$(BUILD)/tsan/%.o: %.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(TSAN_CXXFLAGS) -c $< -o $@

$(BUILD)/bin/tsan_tests: $(TSAN_OBJS)
	@mkdir -p $(dir $@)
	$(CXX) -fsanitize=thread $^ -o $@ -lgtest -lgtest_main $(LDLIBS)

tsan: $(BUILD)/bin/tsan_tests
	$(BUILD)/bin/tsan_tests

$(BUILD)/fuzz/gen/%.o: $(BUILD)/gen/%.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	clang++ $(CPPFLAGS) $(FUZZ_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/fuzz/%.o: %.cc | $(PROTO_H)
	@mkdir -p $(dir $@)
	clang++ $(CPPFLAGS) $(FUZZ_FLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bin/request_fuzzer: $(FUZZ_OBJS)
	@mkdir -p $(dir $@)
	clang++ $(FUZZ_FLAGS) $^ -o $@ -lprotobuf -pthread

# A short fuzzing run (FUZZ_SECONDS, default 20); `make fuzz FUZZ_SECONDS=3600` for a long one.
fuzz: $(BUILD)/bin/request_fuzzer
	@tools/run-fuzz.sh $(BUILD) $(or $(FUZZ_SECONDS),20)

# The whole test suite (ThreadSanitizer suites included); its last line is
# "N passed, N failed".
test: all $(BUILD)/bin/tsan_tests $(BUILD)/bin/request_fuzzer
	@tools/run-tests.sh $(BUILD)

# Long, bounded runs kept out of `make test` (cluster tests named
# DISABLED_Soak*: the nemesis, PAXFLOW_SOAK_SECONDS long, 60 by default);
# its last line is "N passed, N failed" too.
soak: all
	@tools/run-tests.sh $(BUILD) soak

bench: all
	@bench/run.sh $(BUILD)

demo: $(BINS)
	@tools/demo.sh $(BUILD)

# TPC-C and CH-benCHmark the same way: TPC-C alone, CH with one analytic
# stream at the default window, and CH with a window of 100 txns per
# sequencer (the fresh setting); RUNS, DURATION, CONFIG... as for demo.
DEMO_TPCC_RUNS := tpcc,ch,ch:max_inflight=100
demo-tpcc: $(BINS)
	@RUNS="$${RUNS:-$(DEMO_TPCC_RUNS)}" tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/tsan $(BUILD)/fuzz -name '*.d' 2>/dev/null)
