# Cross-compiling for 64-bit ARM Linux on a Debian host (make cross-arm64):
# Debian's aarch64-linux-gnu-gcc (crossbuild-essential-arm64) against the
# arm64 libraries installed beside the host's (dpkg --add-architecture
# arm64; scripts/install-deps.sh arm64), and the programs run under
# qemu-aarch64-static (qemu-user-static), which CTest puts in front of each
# test program. docs/TESTING.md, "ARM64".
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# libraries and headers of the target only; programs (python3, the
# compilers' tools) of the host
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH /)
# pkg-config reads the arm64 .pc files (multiarch: /usr/lib/aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
find_program(HV_QEMU_AARCH64 qemu-aarch64-static)
if(HV_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${HV_QEMU_AARCH64})
endif()
