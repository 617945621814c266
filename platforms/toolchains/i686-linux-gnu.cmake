# Debian 12's i686 cross compiler (g++-i686-linux-gnu). Its binaries run
# natively on x86-64; the default FPU is x87 (FLT_EVAL_METHOD 2).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_CXX_COMPILER i686-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# A native run uses the cross toolchain's own loader and libraries (its
# libgomp is not on the host; mixing the host's /lib32 loader with the
# toolchain's libc hangs in pthread_create).
set(CMAKE_BUILD_RPATH /usr/i686-linux-gnu/lib)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--dynamic-linker=/usr/i686-linux-gnu/lib/ld-linux.so.2")
