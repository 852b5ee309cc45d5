#!/bin/sh
# Build MarkUs (Ainsworth and Jones, S&P 2020: quarantine + conservative mark, a modified
# Boehm-Demers-Weiser collector) for bench/run.py's "markus" allocator.
#
#     bench/build_markus.sh SOURCE_DIR PREFIX
#
# SOURCE_DIR: a checkout of github.com/SamAinsworth/MarkUs-sp2020 (its top folder, holding
# bdwgc-markus/). Its source is not kept in this repository; fetch it by hand.
# PREFIX: where to install; bench/run.py looks for PREFIX/lib/libgc.so through
# $OSCAR_MARKUS_LIB, or finds it under <build>/markus/lib/libgc.so.
# Needs autoconf, automake, libtool, make, gcc, g++ (Debian packages of the same names).
# The configure flags are the ones its README's setup.sh gives. About 2 minutes on 2 cores.
set -eu
src=$(cd "$1" && pwd)
prefix=$2
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
work=$prefix/build
rm -rf "$work"
cp -r "$src/bdwgc-markus" "$work"
cd "$work"
./autogen.sh >autogen.log 2>&1
./configure --prefix="$prefix" --enable-redirect-malloc --enable-threads=posix \
    --disable-gc-assertions --enable-thread-local-alloc --enable-parallel-mark \
    --disable-munmap --enable-cplusplus --enable-large-config --disable-gc-debug \
    >configure.log 2>&1
make -j"$(nproc)" >make.log 2>&1
make install >install.log 2>&1
echo "MarkUs installed: $prefix/lib/libgc.so (preload with $prefix/lib/libgccpp.so for C++)"
