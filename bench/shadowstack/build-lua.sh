#!/bin/sh
# build-lua.sh DIR CC CXX: the Debian build of lua5.4 (its debian/rules steps, without debhelper),
# in DIR = a copy of `apt-get source lua5.4`. With oscar cc:
#   build-lua.sh lua5.4-5.4.4 "oscar cc -- gcc" "oscar cc -- g++"
# then in lua.org's testes/ (tag v5.4.4): ../DIR/src/lua5.4 -e"_U=true" all.lua
set -e
cd "$1"
mkdir -p debian/libtool
cp debian/configure.ac debian/libtool/
(cd debian/libtool && LIBTOOLIZE='libtoolize -i' autoreconf -f -i >/dev/null 2>&1 && CC="$2" CXX="$3" ./configure >configure.log 2>&1)
echo '#ifndef _LUA_DEB_MULTIARCH_
#define _LUA_DEB_MULTIARCH_
#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"
#endif' > src/lua5.4-deb-multiarch.h
make linux-readline LIBTOOL="$PWD/debian/libtool/libtool" CC="$2 -std=gnu99" CXX="$3" V=5.4 >build.log 2>&1
