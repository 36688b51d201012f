#!/usr/bin/env bash
# Write this folder's NAME.java.bin with Apache Paimon's own GlobalIndexResultSerializer, built from source, and
# check that Paimon reads bgix's bytes of every unscored set back as that set (and writes the same bytes).
#
#   bash tests/data/global_index_result/make.sh PAIMON_GIT_DIR [JARS_DIR] [BUILD_DIR] [COMMIT]
#
# PAIMON_GIT_DIR: a clone or bare mirror of apache/paimon. JARS_DIR: jars with RoaringBitmap (default: the venv's
# pyspark/jars). BUILD_DIR: scratch, outside the repository (default: a temporary directory). COMMIT: the Paimon
# commit (default 5dacde5, the one the shipped files were made with). Needs javac 17 and the repository's .venv.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
PY="$REPO/.venv/bin/python"
PAIMON=${1:?PAIMON_GIT_DIR}
JARS=${2:-$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')}
BUILD=${3:-$(mktemp -d)}
COMMIT=${4:-5dacde516bf6e29b583aff8b32bab321bfc6e64f}

rm -rf "$BUILD/raw" "$BUILD/src" "$BUILD/classes" "$BUILD/bgix"
mkdir -p "$BUILD/raw" "$BUILD/src" "$BUILD/classes" "$BUILD/bgix"
git -C "$PAIMON" archive "$COMMIT" paimon-api/src/main/java paimon-common/src/main/java | tar x -C "$BUILD/raw"
for m in paimon-api paimon-common; do cp -r "$BUILD/raw/$m/src/main/java/." "$BUILD/src/"; done
# Paimon's shaded third-party packages -> the plain packages of the jars in JARS_DIR
grep -rl 'org\.apache\.paimon\.shade\.' "$BUILD/src" | xargs sed -i -E \
    's/org\.apache\.paimon\.shade\.(jackson2|guava30|caffeine2)\.//g'
CP="$(ls "$JARS"/*.jar | tr '\n' ':')"
# -sourcepath: javac compiles only the Paimon classes the driver reaches
javac -nowarn -proc:none -encoding UTF-8 -cp "$CP" -sourcepath "$BUILD/src" -d "$BUILD/classes" \
    "$HERE/GlobalIndexResultVectors.java"
RUN=(java -cp "$BUILD/classes:$JARS/*" GlobalIndexResultVectors)

"${RUN[@]}" write "$HERE"
PYTHONPATH="$REPO" "$PY" "$HERE/id_sets.py" "$BUILD/bgix"
"${RUN[@]}" check "$HERE" "$BUILD/bgix"
# what made the shipped files
{ echo "apache/paimon $COMMIT"; (cd "$JARS" && ls RoaringBitmap-*.jar); java -version 2>&1 | head -1; } > "$HERE/MADE_WITH"
