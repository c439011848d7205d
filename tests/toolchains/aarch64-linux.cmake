# aarch64-linux.cmake - cross-build for 64-bit ARM Linux with clang, for the
# "aarch64" preset (tests/run.sh step_aarch64). Debian's aarch64 gcc cannot
# be installed beside gcc-multilib (the -m32 build), so clang targets
# aarch64 with Debian's cross libc and libgcc (libc6-dev-arm64-cross,
# libgcc-12-dev-arm64-cross) and links with the cross binutils' ld
# (binutils-aarch64-linux-gnu), statically, so qemu-aarch64 runs the tests
# without an aarch64 loader or libraries installed (CMAKE_CROSSCOMPILING_
# EMULATOR makes CTest run them through it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
set(CMAKE_SYSROOT /usr/aarch64-linux-gnu)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=/usr/bin/aarch64-linux-gnu-ld -static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
