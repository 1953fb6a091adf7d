#!/usr/bin/env bash
# Re-create ./katex/ (the math renderer inlined into every explorer page and used by the docs)
# from the npm package: the minified script and stylesheet, the woff2 fonts and the licence.
# Usage: attnsym/explorer/vendor/update_katex.sh [VERSION]   (needs npm and tar)
set -euo pipefail
version="${1:-0.19.1}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "katex@${version}" >/dev/null && tar xzf "katex-${version}.tgz")
dist="$work/package/dist"
rm -rf "$here/katex"
mkdir -p "$here/katex/fonts"
cp "$dist/katex.min.js" "$dist/katex.min.css" "$here/katex/"
cp "$dist"/fonts/*.woff2 "$here/katex/fonts/"
cp "$work/package/LICENSE" "$here/katex/LICENSE"
echo "$version" > "$here/katex/VERSION"
echo "katex ${version} -> $here/katex"
