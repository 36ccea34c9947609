# Thin wrapper around CMake so that the README's commands are short.
#   make        install the missing Debian packages that building needs, build
#   make test   install the test tools as well, build, run every test
#               (release build with -Werror; the numerics-sensitive ones
#               again with OpenBLAS forced to a second kernel family, see
#               test-other-blas; then all again under ASan+UBSan); the
#               Hugging Face oracle tier installs its pinned Python packages
#               into BUILD/oracle-venv on the way (scripts/oracle-venv.sh)
#   make test-other-blas  the tests labelled "numerics" (docs/TESTING.md)
#               with OPENBLAS_CORETYPE from scripts/other-blas-core.sh
#               (Sandybridge on an AVX2 host, Haswell on an AVX-512 one), so
#               that a result that holds for one BLAS kernel family only
#               fails here, not on a user's machine
#   make test-avx512-emulated  the kernel tests (AVX512_TESTS) on an
#               emulated AVX-512 CPU: tests/emulated/avx512.sh boots them in
#               Bochs (slow: about 10 minutes; not part of make test;
#               docs/TESTING.md, "Emulated AVX-512 CPU")
#   make cross-arm64  build everything for 64-bit ARM Linux (aarch64) in
#               ARM64_BUILD with Debian's cross compiler (installing it, qemu
#               and the arm64 libraries: scripts/install-deps.sh arm64)
#   make test-arm64  the ARM64 subset (ctest -L arm64: the kernel tests at
#               every NEON level, the parity suite's greedy and beam cases,
#               the demo transcript against make build's) under
#               qemu-aarch64-static (docs/TESTING.md, "ARM64")
#   make run    build the library and hviske (not the test programs: those
#               are make test's) and transcribe the bundled example
#   make format reformat every C file and the web page's JavaScript as
#               .clang-format says (the tests check it)
#   make fuzz   build the libFuzzer targets of tests/fuzz (clang, ASan, UBSan)
#               and run each for FUZZ_SECONDS seconds (default 30; longer
#               runs: make fuzz FUZZ_SECONDS=3600); FUZZ_TARGETS picks some
#   make install  build, then install the programs, libhviske (.so and .a),
#               hviske.h, hviske.pc, the speech detector and the man pages
#               under PREFIX (default /usr/local); DESTDIR is honoured
# Variables: BUILD (build folder), ARM64_BUILD (the cross build's), JOBS,
# PREFIX (install prefix, compiled into the programs' speech detector
# search path), CMAKE_FLAGS (more cmake options, such as
# -DBUILD_TESTING=OFF), FUZZ_BUILD (the fuzzers' folder).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BUILD ?= build
ASAN_BUILD ?= build-asan
ARM64_BUILD ?= build-arm64
CMAKE_FLAGS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS ?=
# test_gemm without its f16 store check: the emulator's VCVTPS2PH rounds
# ties away from zero (docs/TESTING.md)
AVX512_TESTS ?= test_kernels "HV_F16C_TIES_AWAY=1 test_gemm" test_onednn_model test_onednn \
	test_attention
PREFIX_FLAG = $(if $(PREFIX),-DCMAKE_INSTALL_PREFIX=$(abspath $(PREFIX)))

.PHONY: all deps test-deps build test test-release test-other-blas test-asan test-avx512-emulated cross-arm64 test-arm64 run format install clean fuzz

all: build

deps:
	@bash scripts/install-deps.sh

test-deps:
	@bash scripts/install-deps.sh test

CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DHV_WERROR=ON $(PREFIX_FLAG) \
	$(CMAKE_FLAGS)

build: deps
	$(CONFIGURE)
	cmake --build $(BUILD) -j $(JOBS)

test-release: test-deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: test-deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DHV_WERROR=ON -DHV_SANITIZE=ON \
	  -DHV_ORACLE_VENV=$(abspath $(BUILD))/oracle-venv
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

test-other-blas: build
	cd $(BUILD) && OPENBLAS_CORETYPE=$$(bash $(CURDIR)/scripts/other-blas-core.sh) && \
	  echo "numerics tests with OPENBLAS_CORETYPE=$$OPENBLAS_CORETYPE" && \
	  OPENBLAS_CORETYPE=$$OPENBLAS_CORETYPE ctest -L numerics --output-on-failure -j $(JOBS)

test: test-release test-other-blas test-asan

test-avx512-emulated: build
	bash tests/emulated/avx512.sh --build $(BUILD) $(AVX512_TESTS)

cross-arm64:
	@bash scripts/install-deps.sh arm64
	cmake -S . -B $(ARM64_BUILD) -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake \
	  -DCMAKE_BUILD_TYPE=Release -DHV_WERROR=ON -DHV_HOST_CLI=$(abspath $(BUILD))/hviske $(CMAKE_FLAGS)
	cmake --build $(ARM64_BUILD) -j $(JOBS)

test-arm64: test-deps build cross-arm64
	cd $(ARM64_BUILD) && ctest -L arm64 --output-on-failure -j $(JOBS)

run: deps
	$(CONFIGURE)
	cmake --build $(BUILD) -j $(JOBS) --target hviske
	@bash scripts/run-example.sh $(BUILD)

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD)

fuzz: test-deps build
	@bash scripts/install-deps.sh fuzz
	cd $(BUILD) && ctest -R '^fixtures$$' --output-on-failure
	JOBS=$(JOBS) bash scripts/fuzz.sh $(BUILD) $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

format:
	clang-format -i --style=file $$(find src include cli server proglib tools bench research tests examples -name node_modules -prune -o \( -name '*.c' -o -name '*.h' \) -print) server/web/*.js

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(ARM64_BUILD) $(FUZZ_BUILD)
