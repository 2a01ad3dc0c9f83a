#!/usr/bin/env bash
# Writes compile_commands.json next to compile_commands.json.in, replacing @DIR@ with the folder's
# absolute path (clangd needs absolute paths there, so the generated file cannot be committed).
# Usage: scripts/gen-compile-commands.sh [DIR]   (default: fixtures/workspaces/c)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${1:-$here/fixtures/workspaces/c}"
dir="$(cd "$dir" && pwd -P)"
template="$dir/compile_commands.json.in"
[[ -f "$template" ]] || { echo "gen-compile-commands: no template at $template" >&2; exit 1; }
# JSON-escape the path (backslash and double quote), then escape it for sed's replacement side.
json_dir="$(printf '%s' "$dir" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g')"
sed_dir="$(printf '%s' "$json_dir" | sed -e 's/[\\/&|]/\\&/g')"
sed "s|@DIR@|$sed_dir|g" "$template" > "$dir/compile_commands.json.tmp"
mv "$dir/compile_commands.json.tmp" "$dir/compile_commands.json"
echo "wrote $dir/compile_commands.json"
