# Makefile — libnlembed (static and shared), the nlembed tool, the tests, and
# the sanitizer and fuzzing builds. `make help` lists the targets.

CC       ?= gcc
BUILD    ?= build
OPT      ?= -O3 -march=native
SAN      ?=
BLAS_INC ?= /usr/include/x86_64-linux-gnu/openblas-pthread
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS   := $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)

CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fopenmp -fPIC -fno-math-errno -g $(OPT) $(SAN) \
           -Iinclude -I$(BLAS_INC) $(CAIRO_CFLAGS) $(EXTRA_CFLAGS)
LDLIBS  := $(CAIRO_LIBS) -lcholmod -larpack -lfftw3f -llapacke -lopenblas -lz -lm
LDFLAGS := -fopenmp $(SAN) $(EXTRA_LDFLAGS)

LIB_SRC  := $(sort $(wildcard src/*/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
HEADERS  := include/nlembed.h $(wildcard src/*/*.h) $(wildcard cli/*.h) $(wildcard tests/*.h)

.PHONY: all lib test asan check fuzz bench clean help

all: $(BUILD)/libnlembed.a $(BUILD)/libnlembed.so $(BUILD)/nlembed $(BUILD)/test_runner

lib: $(BUILD)/libnlembed.a $(BUILD)/libnlembed.so

$(BUILD)/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/libnlembed.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libnlembed.so: $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libnlembed.so.0 -o $@ $^ $(LDLIBS)

$(BUILD)/nlembed: $(CLI_OBJ) $(BUILD)/libnlembed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/test_runner: $(TEST_OBJ) $(BUILD)/libnlembed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Address and undefined-behaviour sanitizers, in a build folder of their own.
asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" all

# libFuzzer targets, one per reader (clang).
FUZZ_TARGETS := text npy idx gunzip container
fuzz:
	$(MAKE) CC=clang BUILD=build-fuzz OPT="-O1 -fno-omit-frame-pointer" \
	  SAN="-fsanitize=fuzzer-no-link,address,undefined" EXTRA_CFLAGS="-Wno-unused-command-line-argument -Wno-pass-failed" \
	  build-fuzz/libnlembed.a
	@for t in $(FUZZ_TARGETS); do \
	  clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude \
	    fuzz/fuzz_$$t.c build-fuzz/libnlembed.a -o build-fuzz/fuzz_$$t \
	    -fopenmp $(LDLIBS) || exit 1; done

# Benchmark programs (run by hand, see bench/).
bench: $(BUILD)/ea_table $(BUILD)/nbody_scaling $(BUILD)/engine_gradient

$(BUILD)/ea_table: bench/ea_table.c $(BUILD)/libnlembed.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnlembed.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/nbody_scaling: bench/nbody_scaling.c $(BUILD)/libnlembed.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnlembed.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/engine_gradient: bench/engine_gradient.c $(BUILD)/libnlembed.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnlembed.a $(LDFLAGS) $(LDLIBS)

clean:
	rm -rf build build-asan build-fuzz

help:
	@echo "make            library, tool and tests in build/"
	@echo "make asan       the same with ASan+UBSan in build-asan/"
	@echo "make fuzz       libFuzzer targets in build-fuzz/ (clang)"
	@echo "make bench      benchmark programs in build/ (see bench/)"
