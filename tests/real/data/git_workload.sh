#!/bin/bash
# git on a scratch repository (tests/test_real_suites.py): init, add, commit, branch, merge
# (clean and with a resolved conflict), tag, stash, rebase, clone, gc, fsck. Dates, names and
# configuration come from the environment set below, so every hash and every line of stdout
# is the same under every correct allocator.
#   git_workload.sh DIR [FILES]
set -euo pipefail
dir=$1
files=${2:-200}
export HOME=$dir/home GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
export GIT_AUTHOR_NAME="A U Thor" GIT_AUTHOR_EMAIL=author@example.com
export GIT_COMMITTER_NAME="C O Mitter" GIT_COMMITTER_EMAIL=committer@example.com
export TZ=UTC LC_ALL=C GIT_PAGER=cat PAGER=cat EDITOR=true
tick=1700000000
next_date() {
    tick=$((tick + 60))
    export GIT_AUTHOR_DATE="@$tick +0000" GIT_COMMITTER_DATE="@$tick +0000"
}
mkdir -p "$HOME"
g() { git -c init.defaultBranch=main -c pack.threads=1 -c gc.auto=0 -c core.autocrlf=false \
          -c merge.conflictStyle=merge -c advice.detachedHead=false "$@"; }

g init -q "$dir/repo"
cd "$dir/repo"
mkdir -p src docs
for i in $(seq 1 "$files"); do
    {
        echo "// file $i"
        for j in $(seq 1 20); do echo "line $j of file $i: value $(( (i * 7919 + j * 104729) % 10007 ))"; done
    } >"src/f$i.txt"
done
printf 'Scratch repository\n\nGenerated for the Oscar real-suite test.\n' >README
printf 'shared line 1\nshared line 2\nshared line 3\n' >docs/notes.txt
g add -A
next_date; g commit -q -m "initial import of $files files"
echo "commits: $(g rev-list --count HEAD) head $(g rev-parse HEAD)"

# Three commits on main, three on a feature branch, then a clean merge.
g branch feature
for k in 1 2 3; do
    sed -i "s/^line $k of file $k:/line $k of file $k (main $k):/" "src/f$k.txt"
    echo "main change $k" >>README
    next_date; g commit -q -am "main: change $k"
done
g checkout -q feature
for k in 1 2 3; do
    n=$((files - k))
    sed -i "s/^line 5 of file $n:/line 5 of file $n (feature $k):/" "src/f$n.txt"
    echo "feature file $k" >"docs/feature$k.txt"
    g add -A
    next_date; g commit -q -m "feature: change $k"
done
g checkout -q main
next_date; g merge -q --no-ff -m "merge feature" feature
echo "merge head $(g rev-parse HEAD) parents $(g log -1 --format=%P HEAD)"

# A conflict on docs/notes.txt, resolved by hand.
g checkout -q -b topic HEAD~1
sed -i 's/shared line 2/topic line 2/' docs/notes.txt
next_date; g commit -q -am "topic: notes"
g checkout -q main
sed -i 's/shared line 2/main line 2/' docs/notes.txt
next_date; g commit -q -am "main: notes"
if g merge -q -m "merge topic" topic >/dev/null 2>&1; then echo "unexpected clean merge"; exit 1; fi
echo "conflicted: $(g diff --name-only --diff-filter=U)"
grep -c '^<<<<<<<' docs/notes.txt | sed 's/^/conflict markers: /'
printf 'shared line 1\nresolved line 2\nshared line 3\n' >docs/notes.txt
g add docs/notes.txt
next_date; g commit -q --no-edit
echo "resolved head $(g rev-parse HEAD)"

# Tag, stash, rebase a side branch, cherry-pick.
next_date; g tag -a -m "release one" v1
echo "uncommitted" >>README
g stash -q
echo "stash list: $(g stash list | wc -l) clean: $(g status --porcelain | wc -l)"
g stash pop -q
g checkout -q -- README
g checkout -q -b side v1~3
for k in 1 2; do echo "side $k" >"side$k.txt"; g add "side$k.txt"; next_date; g commit -q -m "side $k"; done
next_date; g rebase -q main
echo "rebased side: $(g log --format=%s main..side | tr '\n' '|')"
g checkout -q main
next_date; g cherry-pick side >/dev/null
echo "after cherry-pick: $(g rev-parse HEAD)"

# What is in the repository now.
echo "--- log"
g log --graph --format='%h %an %ad %s' --date=iso-strict --all
echo "--- diff v1..main"
g diff --stat v1 main
echo "--- blame"
g blame -s --date=short docs/notes.txt | cut -c1-60
echo "--- grep"
g grep -c 'feature' -- '*.txt' | sort
echo "--- tree"
g ls-tree -r HEAD | wc -l
g ls-tree -r HEAD | git hash-object --stdin
echo "--- archive"
g archive --format=tar HEAD | sha1sum

# Clone through the pack protocol, gc (repack everything) and check both repositories.
g clone -q --no-local "$dir/repo" "$dir/clone"
echo "clone head $(g -C "$dir/clone" rev-parse HEAD)"
g gc -q --prune=now
g -C "$dir/clone" gc -q --aggressive --prune=now
for r in "$dir/repo" "$dir/clone"; do
    g -C "$r" fsck --full --strict --no-progress
    echo "$(basename "$r"): objects $(g -C "$r" cat-file --batch-all-objects --batch-check | wc -l)" \
         "loose $(g -C "$r" count-objects | cut -d' ' -f1)" \
         "packs $(ls "$r/.git/objects/pack/"*.pack | wc -l)"
    g -C "$r" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' | sha1sum
done
echo "done"
