#!/usr/bin/env bash
# Vendors uPlot (MIT; https://github.com/leeoniya/uPlot) for `mpquic report`'s interactive page:
# the minified browser build, its CSS and its LICENSE, taken from the npm registry's tarball
# (checked against a SHA-256) and compiled into the binary with include_str! (see ../interactive.rs).
# Run it to re-vendor; to upgrade, change VERSION and SHA256 together and commit the result.
set -euo pipefail
VERSION=1.6.32
SHA256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "uplot@$VERSION" >/dev/null)
tarball="$work/uplot-$VERSION.tgz"
echo "$SHA256  $tarball" | sha256sum --check --quiet
tar -xzf "$tarball" -C "$work" package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE
cp "$work/package/dist/uPlot.iife.min.js" "$here/uPlot.iife.min.js"
cp "$work/package/dist/uPlot.min.css" "$here/uPlot.min.css"
cp "$work/package/LICENSE" "$here/uPlot.LICENSE"
echo "$VERSION" > "$here/uPlot.VERSION"
echo "vendored uPlot $VERSION into $here"
