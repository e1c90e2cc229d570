# Makefile — libnlembed (static and shared), the nlembed tool, the tests, and
# the sanitizer and fuzzing builds. `make help` lists the targets.

CC       ?= gcc
BUILD    ?= build
# Portable by default (the hot loops carry AVX2 and AVX-512 versions chosen
# at load time, NLE_HOT); NATIVE=1 tunes everything for the build machine's
# CPU (the binary then needs that CPU).
OPT      ?= -O3 $(if $(filter 1,$(NATIVE)),-march=native -DNLE_NATIVE)
SAN      ?=
PREFIX   ?= /usr/local
LDCONFIG ?= ldconfig
BLAS_INC ?= /usr/include/x86_64-linux-gnu/openblas-pthread
CAIRO_CFLAGS := $(shell pkg-config --cflags cairo 2>/dev/null)
CAIRO_LIBS   := $(shell pkg-config --libs cairo 2>/dev/null || echo -lcairo)
# HDF5 (.h5, .h5ad; Debian's serial flavour) and libmatio (.mat) for the
# readers, with Debian's paths when pkg-config does not know them.
HDF5_CFLAGS  := $(shell pkg-config --cflags hdf5-serial 2>/dev/null || pkg-config --cflags hdf5 2>/dev/null || echo -I/usr/include/hdf5/serial)
HDF5_LIBS    := $(shell pkg-config --libs hdf5-serial 2>/dev/null || pkg-config --libs hdf5 2>/dev/null || echo -lhdf5_serial)
MATIO_CFLAGS := $(shell pkg-config --cflags matio 2>/dev/null)
MATIO_LIBS   := $(shell pkg-config --libs matio 2>/dev/null || echo -lmatio)

# MPI (issue 38, docs/mpi.md): on by default where Debian's OpenMPI
# (libopenmpi-dev) is installed, so that the same binary runs alone or under
# mpirun; MPI=0 builds without it (a communicator is then refused).
MPI ?= $(if $(wildcard /usr/bin/mpicc),1,0)
ifeq ($(MPI),1)
MPI_CFLAGS := -DNLE_WITH_MPI $(shell mpicc --showme:compile 2>/dev/null)
# PARPACK (Debian libparpack2-dev): the spectral methods' eigensolver on
# rows spread over ranks (src/spectral/eigen_rows.c); the MPI build only.
MPI_LIBS   := -lparpack $(shell mpicc --showme:link 2>/dev/null)
endif

VERSION := $(shell sed -n 's/^\#define NLE_VERSION_STRING "\(.*\)"/\1/p' include/nlembed/core.h)
SOMAJOR := $(firstword $(subst ., ,$(VERSION)))

# -fvisibility=hidden: the shared library exports what nlembed.h marks
# NLE_API and nothing else. -MMD -MP: each object depends on the headers it
# includes.
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fopenmp -fPIC -fvisibility=hidden -fno-math-errno -g \
           -MMD -MP $(OPT) $(SAN) -Iinclude -I$(BLAS_INC) $(MPI_CFLAGS) $(EXTRA_CFLAGS)
# The library's dependencies; cairo is the tool's alone (its plots).
DEPLIBS := $(MATIO_LIBS) $(HDF5_LIBS) $(MPI_LIBS) -lcholmod -larpack -lfftw3f -llapacke -lopenblas -lz -lm
LDLIBS  := $(DEPLIBS)
LDFLAGS := -fopenmp $(SAN) $(EXTRA_LDFLAGS)

LIB_SRC  := $(sort $(wildcard src/*/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/*.c))
# The library's objects and the page script of its map page (below).
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/viewer_bundle.o
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/%.o)
SHARED   := $(BUILD)/libnlembed.so.$(VERSION)

.PHONY: all lib test check asan fuzz fuzz-targets bench install uninstall clean help isa

all: $(BUILD)/libnlembed.a $(BUILD)/libnlembed.so $(BUILD)/nlembed $(BUILD)/test_runner

lib: $(BUILD)/libnlembed.a $(BUILD)/libnlembed.so

# The compiler and flags an object was built with: a change (NATIVE=1, a
# sanitizer) rebuilds everything, as a changed header rebuilds its users.
FLAGS_STAMP := $(BUILD)/.cflags
$(shell mkdir -p $(BUILD) && (echo '$(CC) $(CFLAGS)' | cmp -s - $(FLAGS_STAMP) || echo '$(CC) $(CFLAGS)' > $(FLAGS_STAMP)))

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/cli/plot.o: CFLAGS += $(CAIRO_CFLAGS)
$(BUILD)/src/io/hdf5.o $(BUILD)/src/io/matfile.o $(BUILD)/tests/test_formats.o $(BUILD)/tests/test_mpi_io.o: CFLAGS += $(HDF5_CFLAGS) $(MATIO_CFLAGS)

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

$(BUILD)/libnlembed.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# libnlembed.so.0.1.0, with the soname libnlembed.so.0 and both links, as
# installed, so that a program linked against build/ also starts from it.
$(SHARED): $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libnlembed.so.$(SOMAJOR) -o $@ $^ $(LDLIBS)

$(BUILD)/libnlembed.so: $(SHARED)
	ln -sf libnlembed.so.$(VERSION) $(BUILD)/libnlembed.so.$(SOMAJOR)
	ln -sf libnlembed.so.$(VERSION) $@

# The tool ($(1): the page script of `nlembed view` in the library, empty
# when there is none, which the build then says).
define link_tool
	$(CC) $(LDFLAGS) -o $@ $^ $(CAIRO_LIBS) $(LDLIBS)
	@$(if $(1),:,echo "make: note: $@ is built without its viewer (no viewer/dist/nlembed-view.js): 'nlembed view' will refuse to run; ./setup.sh build makes the bundle with node and npm (or: cd viewer && npm ci && node build.mjs), then make again" >&2)
endef
$(BUILD)/nlembed: $(CLI_OBJ) $(BUILD)/libnlembed.a
	$(call link_tool,$(VIEWER_JS))

# The map page's script (viewer/dist/nlembed-view.js, which ./setup.sh
# builds with node and npm) as a C array in the library
# (src/io/view_page.c writes it into each page); without it the array is
# empty, nle_view_available() is false and `nlembed view` says how to build
# it. The stamp records which of the two was compiled.
VIEWER_JS := $(wildcard viewer/dist/nlembed-view.js)
$(shell echo '$(VIEWER_JS)' | cmp -s - $(BUILD)/.viewer || echo '$(VIEWER_JS)' > $(BUILD)/.viewer)
$(BUILD)/viewer_bundle.c: viewer/to_c.sh $(BUILD)/.viewer $(VIEWER_JS)
	sh viewer/to_c.sh $(VIEWER_JS) > $@.tmp && mv $@.tmp $@
$(BUILD)/viewer_bundle.o: $(BUILD)/viewer_bundle.c $(FLAGS_STAMP)
	$(CC) $(CFLAGS) -c $< -o $@
# The same tool without the viewer, as a build without node makes it, for
# tests/viewer.sh (not part of `all`): the empty script linked before the
# archive, so the archive's is not pulled in.
$(BUILD)/viewer_none.c: viewer/to_c.sh
	sh viewer/to_c.sh > $@.tmp && mv $@.tmp $@
$(BUILD)/viewer_none.o: $(BUILD)/viewer_none.c $(FLAGS_STAMP)
	$(CC) $(CFLAGS) -c $< -o $@
$(BUILD)/nlembed-noviewer: $(CLI_OBJ) $(BUILD)/viewer_none.o $(BUILD)/libnlembed.a
	$(call link_tool,)

$(BUILD)/test_runner: $(TEST_OBJ) $(BUILD)/libnlembed.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The tool with its hot loops (NLE_HOT) built for one instruction set alone
# (NLE_HOT_ISA: 0 the portable x86-64, 3 x86-64-v3, 4 x86-64-v4), the rest
# shared with build/: tests/isa.sh checks that the three and the
# dispatching tool give the same bits.
HOT_SRC    := $(shell grep -l '^NLE_HOT' $(LIB_SRC))
ISA_LEVELS := 0 3 4
isa: $(ISA_LEVELS:%=$(BUILD)/isa/nlembed-%)
define isa_level
$(BUILD)/isa/$(1)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -DNLE_HOT_ISA=$(1) -c $$< -o $$@
$(BUILD)/isa/nlembed-$(1): $(CLI_OBJ) $(filter-out $(HOT_SRC:%.c=$(BUILD)/%.o),$(LIB_OBJ)) \
                          $(HOT_SRC:%.c=$(BUILD)/isa/$(1)/%.o)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(CAIRO_LIBS) $$(LDLIBS)
-include $(HOT_SRC:%.c=$(BUILD)/isa/$(1)/%.d)
endef
$(foreach level,$(ISA_LEVELS),$(eval $(call isa_level,$(level))))

# The whole suite: unit, command-line and bad-input tests under the
# optimised and the sanitizer builds, then every fuzz target for a few
# seconds (tests/run.sh; `./setup.sh test` installs what it needs first).
check test: all
	bash tests/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/nlembed $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(BUILD)/libnlembed.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libnlembed.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libnlembed.so.$(SOMAJOR)
	ln -sf libnlembed.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libnlembed.so
	install -m 644 include/nlembed.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 include/nlembed/*.h $(DESTDIR)$(PREFIX)/include/nlembed/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  -e 's|@PRIVATE@|$(DEPLIBS) -fopenmp|' nlembed.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlembed.pc
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  -e 's|@PRIVATE@|$(DEPLIBS) -fopenmp|' nlembed-static.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlembed-static.pc
	install -m 755 $(BUILD)/nlembed $(DESTDIR)$(PREFIX)/bin/
	@# the dynamic loader's cache, so that programs and `import nlembed` find
	@# the new library without LD_LIBRARY_PATH (not for a staged DESTDIR)
	@if [ -z "$(DESTDIR)" ]; then \
	  ld=$$(command -v $(LDCONFIG) || command -v /sbin/$(LDCONFIG) || true); \
	  if [ -n "$$ld" ]; then "$$ld" || echo "make install: run '$(LDCONFIG)' as root to refresh the loader's cache"; fi; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libnlembed.a $(DESTDIR)$(PREFIX)/lib/libnlembed.so* \
	  $(DESTDIR)$(PREFIX)/include/nlembed.h $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlembed.pc \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig/nlembed-static.pc $(DESTDIR)$(PREFIX)/include/nlembed/*.h \
	  $(DESTDIR)$(PREFIX)/bin/nlembed

# Address and undefined-behaviour sanitizers, in a build folder of their own,
# with allocation-failure injection (NLE_ALLOC_FAULTS, tests/test_faults.c).
# -fexpensive-optimizations (on from -O2) turns on GCC's vzeroupper pass: at
# plain -O1 the AVX-512 clones return with the vector registers' upper halves
# dirty, and every SSE instruction after them (libm's exp in the exact
# repulsion) pays for it: the ASan unit tests took 416 s instead of ~100.
asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -fexpensive-optimizations -fno-omit-frame-pointer -DNLE_ALLOC_FAULTS" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" all

# libFuzzer targets (clang): the last field of each NLE_READER and NLE_FUZZ
# row of the reader table (src/io/readers.def; "none": a reader without one),
# fuzz/fuzz_TARGET.c each. `make fuzz-targets` lists them for fuzz/run.sh.
FUZZ_TARGETS := $(filter-out none,$(shell sed -En 's/^NLE_(READER|FUZZ)\((.*[ ,])?([a-z0-9_]+)\)$$/\3/p' src/io/readers.def))
fuzz-targets:
	@echo $(FUZZ_TARGETS)
fuzz:
	$(MAKE) CC=clang BUILD=build-fuzz OPT="-O1 -fno-omit-frame-pointer" \
	  SAN="-fsanitize=fuzzer-no-link,address,undefined" EXTRA_CFLAGS="-Wno-unused-command-line-argument -Wno-pass-failed" \
	  build-fuzz/libnlembed.a
	@for t in $(FUZZ_TARGETS); do \
	  clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Iinclude $(HDF5_CFLAGS) $(MATIO_CFLAGS) \
	    fuzz/fuzz_$$t.c build-fuzz/libnlembed.a -o build-fuzz/fuzz_$$t \
	    -fopenmp $(LDLIBS) || exit 1; done

# Benchmark programs (run by hand, see bench/).
BENCH := ea_table nbody_scaling engine_gradient graph_candidates mpi_graph
# with MPI: the distributed t-SNE iterations (issue 38)
ifeq ($(MPI),1)
BENCH += mpi_tsne_iter
endif
bench: $(BENCH:%=$(BUILD)/%)

$(BENCH:%=$(BUILD)/%): $(BUILD)/%: bench/%.c $(BUILD)/libnlembed.a
	$(CC) $(CFLAGS) -o $@ $< $(BUILD)/libnlembed.a $(LDFLAGS) $(LDLIBS)

clean:
	rm -rf build build-asan build-fuzz build-native

help:
	@echo "make              library, tool and tests in build/ (NATIVE=1: tuned for this CPU)"
	@echo "make check        the whole test suite (tests/run.sh)"
	@echo "make install      PREFIX=/usr/local (and DESTDIR): library, header, nlembed.pc and nlembed-static.pc, tool"
	@echo "make asan         the same with ASan+UBSan in build-asan/"
	@echo "make fuzz         libFuzzer targets in build-fuzz/ (clang)"
	@echo "make isa          the tool with its hot loops for one instruction set each (tests/isa.sh)"
	@echo "make bench        benchmark programs in build/ (see bench/)"
