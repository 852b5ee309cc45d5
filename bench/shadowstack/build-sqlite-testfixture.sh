#!/bin/sh
# build-sqlite-testfixture.sh DIR CC: SQLite's Tcl test harness, testfixture, built the Debian way
# (debian/rules' CFLAGS and configure options, without debhelper, except --disable-amalgamation:
# 3.40.1's non-amalgamation testfixture links ext/fts3/fts3_term.c twice and fails) in DIR = a
# copy of `apt-get source sqlite3` (3.40.1 on Debian 12; needs tcl-dev). With oscar cc:
#   build-sqlite-testfixture.sh sqlite3-3.40.1 "oscar cc -- gcc"
# then in DIR: ./testfixture test/FILE.test (tests/test_shadowstack_sqlite.py runs a list).
set -e
cd "$1"
CFLAGS="-O2 -fno-strict-aliasing -DSQLITE_SECURE_DELETE -DSQLITE_ENABLE_COLUMN_METADATA \
-DSQLITE_ENABLE_FTS3 -DSQLITE_ENABLE_FTS3_PARENTHESIS -DSQLITE_ENABLE_RTREE=1 -DSQLITE_SOUNDEX=1 \
-DSQLITE_ENABLE_UNLOCK_NOTIFY -DSQLITE_OMIT_LOOKASIDE=1 -DSQLITE_ENABLE_DBSTAT_VTAB \
-DSQLITE_ALLOW_ROWID_IN_VIEW -DSQLITE_ENABLE_UPDATE_DELETE_LIMIT=1 -DSQLITE_ENABLE_LOAD_EXTENSION \
-DSQLITE_ENABLE_JSON1 -DSQLITE_LIKE_DOESNT_MATCH_BLOBS -DSQLITE_THREADSAFE=1 \
-DSQLITE_ENABLE_FTS3_TOKENIZER=1 -DSQLITE_USE_URI=1 -DSQLITE_MAX_SCHEMA_RETRY=25 \
-DSQLITE_ENABLE_PREUPDATE_HOOK -DSQLITE_ENABLE_SESSION -DSQLITE_ENABLE_STMTVTAB \
-DSQLITE_MAX_VARIABLE_NUMBER=250000"
export CFLAGS
CC="$2" ./configure --enable-threadsafe --enable-load-extension --enable-json --enable-fts4 \
    --enable-fts5 --with-tcl=/usr/lib/x86_64-linux-gnu/tcl8.6 \
    >configure.log 2>&1
make -j"${JOBS:-2}" testfixture >build.log 2>&1
